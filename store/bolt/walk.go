package bolt

import (
	"fmt"
	"io"
)

// maxTreeDepth bounds the walk: bbolt trees of signd's size are a few
// levels deep, and every nested bucket adds its own levels.
const maxTreeDepth = 64

// walker checks the structure of every page reachable from a root: what
// bbolt dereferences without checking while it reads (element offsets and
// sizes within the page, child pages below the high water mark, page
// headers that name their page, no page reached twice), so that bbolt's
// own consistency check and reads that follow cannot run off the mapping.
type walker struct {
	r    io.ReaderAt
	f    *fileFormat
	seen map[uint64]bool
}

func newWalker(r io.ReaderAt, f *fileFormat) *walker {
	return &walker{r: r, f: f, seen: map[uint64]bool{}}
}

// tree walks the B+tree rooted at page id. path names it for messages.
func (w *walker) tree(id uint64, depth int, path string) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: page %d: tree deeper than %d levels", path, id, maxTreeDepth)
	}
	if w.seen[id] {
		return fmt.Errorf("%s: page %d is referenced twice", path, id)
	}
	w.seen[id] = true
	h, b, err := readPage(w.r, w.f, id)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for i := uint64(1); i <= uint64(h.overflow); i++ {
		if w.seen[id+i] {
			return fmt.Errorf("%s: page %d (overflow of page %d) is referenced twice", path, id+i, id)
		}
		w.seen[id+i] = true
	}
	switch h.flags {
	case flagBranch:
		return w.branch(id, h, b, depth, path)
	case flagLeaf:
		return w.leaf(fmt.Sprintf("page %d", id), h, b, depth, path)
	}
	return fmt.Errorf("%s: page %d: not a branch or leaf page (flags %#x)", path, id, h.flags)
}

// elements checks that the page's element headers fit in it.
func elements(h pageHeader, page []byte) error {
	if pageHeaderSize+int(h.count)*elementSize > len(page) {
		return fmt.Errorf("%d elements do not fit in %d bytes", h.count, len(page))
	}
	return nil
}

// span returns page[off+pos : off+pos+n] when it lies inside page.
func span(page []byte, off int, pos, n uint64) ([]byte, bool) {
	start := uint64(off) + pos
	end := start + n
	if end > uint64(len(page)) {
		return nil, false
	}
	return page[start:end], true
}

func (w *walker) branch(id uint64, h pageHeader, b []byte, depth int, path string) error {
	if err := elements(h, b); err != nil {
		return fmt.Errorf("%s: branch page %d: %w", path, id, err)
	}
	if h.count == 0 {
		return fmt.Errorf("%s: branch page %d has no elements", path, id)
	}
	for i := range int(h.count) {
		off := pageHeaderSize + i*elementSize
		pos, ksize, child := ne.Uint32(b[off:]), ne.Uint32(b[off+4:]), ne.Uint64(b[off+8:])
		if _, ok := span(b, off, uint64(pos), uint64(ksize)); !ok {
			return fmt.Errorf("%s: branch page %d: element %d: key outside the page", path, id, i)
		}
		if err := w.tree(child, depth+1, path); err != nil {
			return err
		}
	}
	return nil
}

// leaf checks a leaf page (a page of the file, or a bucket inlined in a
// value) and walks the buckets it holds.
func (w *walker) leaf(where string, h pageHeader, b []byte, depth int, path string) error {
	if err := elements(h, b); err != nil {
		return fmt.Errorf("%s: leaf %s: %w", path, where, err)
	}
	for i := range int(h.count) {
		off := pageHeaderSize + i*elementSize
		flags, pos, ksize, vsize := ne.Uint32(b[off:]), ne.Uint32(b[off+4:]), ne.Uint32(b[off+8:]), ne.Uint32(b[off+12:])
		key, ok := span(b, off, uint64(pos), uint64(ksize))
		if !ok {
			return fmt.Errorf("%s: leaf %s: element %d: key outside the page", path, where, i)
		}
		value, ok := span(b, off, uint64(pos)+uint64(ksize), uint64(vsize))
		if !ok {
			return fmt.Errorf("%s: leaf %s: element %d: value outside the page", path, where, i)
		}
		if flags&flagBucket == 0 {
			continue
		}
		sub := path + "/" + printable(key)
		if len(value) < bucketHeader {
			return fmt.Errorf("%s: leaf %s: element %d: bucket header cut short", path, where, i)
		}
		if root := ne.Uint64(value); root != 0 {
			if err := w.tree(root, depth+1, sub); err != nil {
				return err
			}
			continue
		}
		inline := value[bucketHeader:]
		if len(inline) < pageHeaderSize {
			return fmt.Errorf("%s: inline bucket cut short", sub)
		}
		ih := parseHeader(inline)
		if ih.flags != flagLeaf {
			return fmt.Errorf("%s: inline bucket is not a leaf page (flags %#x)", sub, ih.flags)
		}
		if depth+1 > maxTreeDepth {
			return fmt.Errorf("%s: buckets nested deeper than %d levels", sub, maxTreeDepth)
		}
		if err := w.leaf("inline page", ih, inline, depth+1, sub); err != nil {
			return err
		}
	}
	return nil
}

// printable renders a bucket name for a message.
func printable(name []byte) string {
	for _, c := range name {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", name)
		}
	}
	return string(name)
}

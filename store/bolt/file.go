package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/signd/signd/store"
)

// This file reads the bbolt file format (go.etcd.io/bbolt, internal/common:
// page.go, meta.go, types.go) by itself, with bounds checks, so that a file
// is judged before bbolt maps it. bbolt trusts the bytes it maps: a
// truncated file, a foreign file or a damaged page makes it panic or fault
// (SIGSEGV, SIGBUS) in Open, and a fault on mapped memory kills the process
// whatever recover does. Integers are in the machine's byte order, as bbolt
// writes them.

// The bbolt format.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elementSize    = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	metaSize       = 64 // magic, version, pageSize, flags u32; root, sequence, freelist, pgid, txid, checksum u64
	bucketHeader   = 16 // a bucket's value: root pgid u64, sequence u64, then an inline page when root is 0

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	flagBucket   = 0x01 // leaf element flag: the value is a bucket

	noFreelist = ^uint64(0)

	minPageSize = 1 << 9
	maxPageSize = 1 << 24
)

var ne = binary.NativeEndian

// meta is one decoded meta page.
type meta struct {
	pageSize uint32
	root     uint64 // root page of the root bucket
	freelist uint64 // noFreelist when the freelist is not stored
	pgid     uint64 // high water mark: pages 0..pgid-1 are in use or free
	txid     uint64
}

// decodeMeta checks the meta page of id in page (at least metaSize bytes
// after the header): header, magic, version, page size and checksum.
func decodeMeta(page []byte, id uint64) (meta, error) {
	if len(page) < pageHeaderSize+metaSize {
		return meta{}, fmt.Errorf("meta page %d: cut short", id)
	}
	m := page[pageHeaderSize : pageHeaderSize+metaSize]
	switch {
	case ne.Uint32(m[0:]) != boltMagic:
		return meta{}, fmt.Errorf("meta page %d: no bbolt magic number", id)
	case ne.Uint32(m[4:]) != boltVersion:
		return meta{}, fmt.Errorf("meta page %d: bbolt format version %d, want %d", id, ne.Uint32(m[4:]), boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:56])
	if h.Sum64() != ne.Uint64(m[56:]) {
		return meta{}, fmt.Errorf("meta page %d: checksum mismatch", id)
	}
	if pid, flags := ne.Uint64(page[0:]), ne.Uint16(page[8:]); pid != id || flags != flagMeta {
		return meta{}, fmt.Errorf("meta page %d: page header says page %d, flags %#x", id, pid, flags)
	}
	out := meta{
		pageSize: ne.Uint32(m[8:]), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]),
		pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:]),
	}
	if ps := out.pageSize; ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		return meta{}, fmt.Errorf("meta page %d: page size %d", id, ps)
	}
	if out.pgid < 3 || out.root < 2 || out.root >= out.pgid {
		return meta{}, fmt.Errorf("meta page %d: root page %d outside the %d pages it claims", id, out.root, out.pgid)
	}
	if out.freelist != noFreelist && (out.freelist < 2 || out.freelist >= out.pgid) {
		return meta{}, fmt.Errorf("meta page %d: freelist page %d outside the %d pages it claims", id, out.freelist, out.pgid)
	}
	return out, nil
}

// fileFormat is what validateFormat learned of a file.
type fileFormat struct {
	pageSize int
	size     int64
	active   meta // the meta page bbolt uses: the one with the higher txid
}

// validateFormat checks what bbolt reads when it opens a file: both meta
// pages (header, magic, version, page size, checksum), the file size
// against the high water mark of each, and the freelist and root page
// headers of the meta bbolt would use. It refuses a file where either meta
// page is damaged, although bbolt would fall back to the other: that
// silently rolls back the last committed transaction, and with it
// possibly a consumed SAD and its audit entry.
func validateFormat(r io.ReaderAt, size int64) (*fileFormat, error) {
	if size == 0 {
		return nil, errors.New("the file is empty (0 bytes), not a store")
	}
	first := make([]byte, pageHeaderSize+metaSize)
	if n, err := r.ReadAt(first, 0); n < len(first) {
		if err == nil || err == io.EOF {
			return nil, fmt.Errorf("truncated: %d bytes, shorter than a bbolt meta page", size)
		}
		return nil, err
	}
	m0, err0 := decodeMeta(first, 0)
	if err0 != nil && ne.Uint32(first[pageHeaderSize:]) != boltMagic {
		if m1, ok := findMeta1(r, size); ok {
			return nil, fmt.Errorf("%w (meta page 1 is intact, at txid %d)", err0, m1.txid)
		}
		return nil, errors.New("not a bbolt database file (no bbolt magic number at the start)")
	}
	if err0 != nil {
		return nil, err0
	}
	ps := int64(m0.pageSize)
	if size < 2*ps {
		return nil, fmt.Errorf("truncated: %d bytes, shorter than the two meta pages of %d bytes", size, ps)
	}
	second := make([]byte, pageHeaderSize+metaSize)
	if _, err := r.ReadAt(second, ps); err != nil {
		return nil, fmt.Errorf("meta page 1: %w", err)
	}
	m1, err1 := decodeMeta(second, 1)
	if err1 != nil {
		return nil, err1
	}
	if m1.pageSize != m0.pageSize {
		return nil, fmt.Errorf("meta pages disagree on the page size (%d, %d)", m0.pageSize, m1.pageSize)
	}
	for i, m := range []meta{m0, m1} {
		if need := int64(m.pgid) * ps; size < need {
			return nil, fmt.Errorf("truncated: %d bytes, meta page %d (txid %d) needs %d (%d pages of %d bytes)",
				size, i, m.txid, need, m.pgid, ps)
		}
	}
	f := &fileFormat{pageSize: int(ps), size: size, active: m0}
	if m1.txid > m0.txid {
		f.active = m1
	}
	if f.active.freelist != noFreelist {
		if err := checkFreelist(r, f); err != nil {
			return nil, err
		}
	}
	hdr, err := readHeader(r, f, f.active.root)
	if err != nil {
		return nil, err
	}
	if hdr.flags != flagBranch && hdr.flags != flagLeaf {
		return nil, fmt.Errorf("root page %d: not a branch or leaf page (flags %#x)", f.active.root, hdr.flags)
	}
	return f, nil
}

// findMeta1 looks for an intact meta page 1 where a page size would put it,
// only to make the message of a damaged meta page 0 precise.
func findMeta1(r io.ReaderAt, size int64) (meta, bool) {
	buf := make([]byte, pageHeaderSize+metaSize)
	for ps := int64(minPageSize); ps <= maxPageSize && ps+int64(len(buf)) <= size; ps <<= 1 {
		if _, err := r.ReadAt(buf, ps); err != nil {
			continue
		}
		if m, err := decodeMeta(buf, 1); err == nil && int64(m.pageSize) == ps {
			return m, true
		}
	}
	return meta{}, false
}

// pageHeader is the 16-byte header of every page.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func parseHeader(b []byte) pageHeader {
	return pageHeader{id: ne.Uint64(b[0:]), flags: ne.Uint16(b[8:]), count: ne.Uint16(b[10:]), overflow: ne.Uint32(b[12:])}
}

// readHeader reads the header of page id, which must be below the high
// water mark, say it is page id, and fit (with its overflow) below it.
func readHeader(r io.ReaderAt, f *fileFormat, id uint64) (pageHeader, error) {
	if id < 2 || id >= f.active.pgid {
		return pageHeader{}, fmt.Errorf("page %d: outside the %d pages of the file", id, f.active.pgid)
	}
	b := make([]byte, pageHeaderSize)
	if _, err := r.ReadAt(b, int64(id)*int64(f.pageSize)); err != nil {
		return pageHeader{}, fmt.Errorf("page %d: %w", id, err)
	}
	h := parseHeader(b)
	if h.id != id {
		return h, fmt.Errorf("page %d: its header says page %d", id, h.id)
	}
	if uint64(h.overflow) >= f.active.pgid-id {
		return h, fmt.Errorf("page %d: %d overflow pages run past the %d pages of the file", id, h.overflow, f.active.pgid)
	}
	return h, nil
}

// readPage reads page id with its overflow pages.
func readPage(r io.ReaderAt, f *fileFormat, id uint64) (pageHeader, []byte, error) {
	h, err := readHeader(r, f, id)
	if err != nil {
		return h, nil, err
	}
	b := make([]byte, (int64(h.overflow)+1)*int64(f.pageSize))
	if _, err := r.ReadAt(b, int64(id)*int64(f.pageSize)); err != nil {
		return h, nil, fmt.Errorf("page %d: %w", id, err)
	}
	return h, b, nil
}

// checkFreelist checks the freelist page bbolt loads at Open: its type,
// that its ids fit in it, and that each id is a page of the file.
func checkFreelist(r io.ReaderAt, f *fileFormat) error {
	id := f.active.freelist
	h, b, err := readPage(r, f, id)
	if err != nil {
		return fmt.Errorf("freelist: %w", err)
	}
	if h.flags != flagFreelist {
		return fmt.Errorf("freelist page %d: not a freelist page (flags %#x)", id, h.flags)
	}
	start, count := pageHeaderSize, uint64(h.count)
	if h.count == 0xFFFF { // the real count is the first element
		if len(b) < pageHeaderSize+8 {
			return fmt.Errorf("freelist page %d: cut short", id)
		}
		count, start = ne.Uint64(b[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(b)-start)/8 {
		return fmt.Errorf("freelist page %d: %d ids do not fit in %d bytes", id, count, len(b))
	}
	for i := range count {
		if p := ne.Uint64(b[start+int(i)*8:]); p < 2 || p >= f.active.pgid {
			return fmt.Errorf("freelist page %d: free page %d outside the %d pages of the file", id, p, f.active.pgid)
		}
	}
	return nil
}

// DamageError is the refusal of a damaged store file: it names the file,
// what is wrong and what to do. It wraps store.ErrCorrupt.
type DamageError struct {
	Path   string
	Reason string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%v: %s: %s; signd neither opens nor re-creates it. "+
		"Restore a backup made with `signd store backup FILE` (point store.path at it, or copy it to %s with the daemon stopped), "+
		"or move the file aside to start an empty store; `signd store check` describes the damage",
		store.ErrCorrupt, e.Path, e.Reason, e.Path)
}

func (e *DamageError) Unwrap() error { return store.ErrCorrupt }

func corruptError(path, reason string) error {
	return &DamageError{Path: path, Reason: reason}
}

// checkFile judges an existing store file before bbolt opens it: a file
// that is not there is fine for a read-write open (openFile creates it
// where checkPlace allows), anything else must be a
// regular, intact bbolt file. It takes the file lock (shared for a
// read-only open) for as long as it reads, so it never judges a file that
// another process is writing: that fails with store.ErrLocked after
// timeout, as Open would.
func checkFile(path string, readOnly bool, timeout time.Duration) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) && !readOnly {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return corruptError(path, fmt.Sprintf("not a regular file (%s)", fi.Mode().Type()))
	}
	if fi.Size() == 0 {
		return corruptError(path, "the file is empty (0 bytes), not a store")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ELOOP) {
		return symlinkError(path)
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}
	defer f.Close()
	how := unix.LOCK_EX
	if readOnly {
		how = unix.LOCK_SH
	}
	if err := flockWait(f, how, timeout); err != nil {
		if errors.Is(err, errLockTimeout) {
			return fmt.Errorf("%w: %s is held by another process, waited %s (is signd serve running?)", store.ErrLocked, path, timeout)
		}
		return fmt.Errorf("store: lock %s: %w", path, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing unlocks too
	if _, err := validateFormat(f, fi.Size()); err != nil {
		return corruptError(path, err.Error())
	}
	return nil
}

var errLockTimeout = errors.New("lock wait timed out")

// flockWait takes an flock on f, polling as bbolt does, for at most
// timeout.
func flockWait(f *os.File, how int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return errLockTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

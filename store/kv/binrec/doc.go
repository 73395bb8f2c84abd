// Package binrec is the compact binary form in which store/kv writes the
// records of the signing and token hot paths (tokens: access tokens and
// SADs) instead of JSON: about half the bytes, so more of them fit a page
// and a commit writes fewer, and a decode that is a walk over the bytes
// instead of a JSON parse. Which fields a record has, in which order, is
// store/kv's (codec.go); this package writes and reads the fields.
//
// A binary record starts with its format byte ([Format1]). A JSON record
// starts with '{', so both are told apart by their first byte
// ([IsBinary]) and a file written before the binary form existed reads as
// it did.
//
// Format 1 is a sequence of fields in a fixed order, each one of:
//
//	string, bytes   uvarint length ‖ the bytes
//	list            uvarint count ‖ that many strings, or byte strings each
//	                as uvarint (length + 1, 0 for nil) ‖ the bytes
//	map             uvarint count ‖ (string key ‖ bytes value) in key order
//	time            varint Unix seconds ‖ uvarint nanoseconds (< 1e9); the
//	                zero time.Time is its own seconds value, read back in UTC
//
// Nothing may follow the last field. A [Decoder] never trusts a length or
// a count: each is checked against the bytes left before anything is
// allocated, so a damaged record costs at most its own size. Its first
// error sticks ([Decoder.End] returns it).
package binrec

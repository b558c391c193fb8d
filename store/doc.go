// Package store persists a cassette in one bbolt file.
//
// A store holds four things, each in its own bucket:
//
//   - interactions, in recorded order, keyed by an ordinal id (1, 2, 3, …);
//   - an index from match key to the ids recorded under it, so that a lookup
//     is a prefix seek and never scans the cassette;
//   - a second index from a coarse request shape (method, upstream, path) to
//     ids, used only to explain a miss;
//   - preset fixtures, keyed by tool call id;
//
// and a metadata bucket with the format version, creation and update times, and
// the settings the index was built with.
//
// # Rules
//
// Values are opaque bytes: the store never interprets an interaction. Every
// write is one bbolt transaction, so a crash leaves either all of a write or
// none of it. A writable store takes bbolt's exclusive file lock with a
// timeout and reports ErrLocked naming the file; a read-only store takes a
// shared lock, so many processes may replay one file at once. Open refuses a
// file that is not a bbolt file (ErrNotCassette) or was written by a newer
// format (ErrFormatVersion), and checks the whole file before it returns:
// a damaged file is ErrCorrupt at once, not a failure halfway through a
// replay or a write on top of damage. bbolt panics, or faults on its memory
// map, when it meets a damaged page; every call into it runs under a guard
// that turns that into ErrCorrupt naming the file, so no file can crash the
// process. Some damage makes bbolt neither panic nor fail but loop for ever
// (a branch page that points at its own ancestor) or allocate without bound
// (an absurd freelist), so before bbolt reads a file's pages Open walks the
// page tree itself, with plain reads into bounded buffers and work bounded
// by the file's size, making bbolt's own consistency checks on the way (key
// order, pages lost or freed twice), and refuses such a file with
// ErrCorrupt naming the page at fault. The walk does not go through bbolt's
// memory map, so opening leaves none of the file resident in the process;
// a read-only store also drops the pages its reads touched from the process
// once they pass Options.ResidentLimit, so serving a large cassette holds
// memory bounded by that limit, not by the file.
package store

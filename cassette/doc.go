// Package cassette is the interaction model of llmproxy: what one recorded
// request and response hold, how secrets are removed from them before
// anything reaches disk, and the stable JSON form used to review, diff and
// rebuild a cassette.
//
// # Rules
//
// An Interaction is appended only once its response is complete, in one
// store transaction together with its index entries. Bodies are kept as the
// exact bytes that were sent and received (decoded from gzip, br or
// deflate), never re-marshalled. A Redactor runs on every interaction before
// it is stored; by default it removes the credentials of every supported
// provider. Export writes the same bytes for the same cassette, and Import
// of an export followed by Export gives the export back byte for byte.
//
// An Indexer is the one index-key policy: under a set of matching rules
// (package match) and a Redactor's secrets it gives an interaction its match
// key and shape, and names the rules by the fingerprint the metadata keeps,
// so the two always agree. The server, import, scrub and the tests' proxy
// all index with one; DefaultIndexer is the one a cassette written outside
// a server takes, so that replay reads its index as it is.
//
// An interaction is stored as a format-2 record (record.go): its response
// body and stream events raw, beside an event table, so that Read and
// Reply serve them from the file's pages without decoding; a format-1
// record (one JSON document) is still read. Everything else works on the
// Interaction.
//
// A whole new cassette file is written one way only: as a Draft beside its
// path (a unique temporary name in the same directory), flushed to disk,
// renamed over the path and the directory flushed (Create, Commit,
// WriteFile). A reader or a crash sees the old file or the whole new one.
package cassette

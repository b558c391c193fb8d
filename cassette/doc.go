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
package cassette

// Package refresh works out what an `auto --refresh` run changed in a
// cassette and writes the refreshed cassette in one atomic rewrite.
//
// # The plan
//
// A refresh run records into a scratch copy of the cassette
// (cassette.Cassette.Scratch): the old interactions keep their ids, the
// ones recorded in the run come after the old last id. Plan groups the
// old interactions into conversations by message history
// (cassette.Conversations, as diff and scenario from-cassette group them),
// then groups the run's own requests the same way: the old interactions it
// replayed, in recorded order, then the ones it recorded. A run
// conversation that recorded something diverged from the old conversation
// of the last turn it replayed, at the turn after it: the old turns from
// there on that the run did not replay are superseded and dropped, and
// the new turns take their place in the cassette's order. A run
// conversation that replayed nothing began anew (its first request
// changed): its turns go at the end, and no old conversation is known to
// be superseded, so none is dropped. Old interactions no request used stay
// unless the plan prunes.
//
// # Rules
//
// Nothing is written until Write, which writes the whole cassette beside
// the old file and renames it over it (cassette.WriteFile): a crash or a
// kill at any point leaves the old file byte for byte, or the whole new
// one. A plan that changes nothing writes nothing.
package refresh

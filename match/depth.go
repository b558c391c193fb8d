package match

import (
	"github.com/llmproxy/llmproxy/internal/jsonvalue"
)

// MaxDepth bounds the nesting of a JSON body that is compared structurally.
// Canonicalising costs the body's size times its depth, and the JSON
// validator recurses once per level: without a bound, a few hundred
// kilobytes of brackets hold a request for minutes, and a body of 30 MiB of
// them overflows the goroutine stack, which ends the process.
const MaxDepth = jsonvalue.MaxDepth

// deeper reports whether b nests arrays and objects more than limit deep.
func deeper(b []byte, limit int) bool { return jsonvalue.NestedDeeper(b, limit) }

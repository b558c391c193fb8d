package wire

import "errors"

var (
	// ErrMalformed means a body is not what its API kind requires: not JSON,
	// truncated JSON, or a known field of the wrong type. The wrapping error
	// names the JSON path, stream event or byte offset at fault.
	ErrMalformed = errors.New("malformed body")
	// ErrNotFound means the tool call or tool-result turn asked for is not in
	// the body.
	ErrNotFound = errors.New("not found")
	// ErrUnsupported means the operation has no meaning for the API kind (tool
	// results in an embeddings request, say) or the kind is unknown.
	ErrUnsupported = errors.New("unsupported")
	// ErrInvalidAnswer means an Answer or ErrorAnswer cannot be written: tool
	// call arguments that are not a JSON object, a negative token count, an
	// embedding value that is not finite, an error status outside 400–599.
	ErrInvalidAnswer = errors.New("invalid answer")
)

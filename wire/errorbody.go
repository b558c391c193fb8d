package wire

import "strconv"

// ErrorBody returns an error response body in the provider's own shape, so
// that each official SDK raises an error carrying message, and its content
// type (always "application/json"):
//
//	OpenAI kinds, generic  {"error":{"message":m,"type":t,"param":null,"code":t}}
//	Anthropic              {"type":"error","error":{"type":t,"message":m}}
//	Gemini                 {"error":{"code":status,"message":m,"status":S,"details":[ErrorInfo{reason:t}]}}
//	Ollama                 {"error":m}
//
// S is the google.rpc code name for the HTTP status (400 INVALID_ARGUMENT,
// 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED, 500 INTERNAL, …). Ollama's shape
// has no room for errType. The body is compact JSON without a final newline.
func ErrorBody(kind Kind, status int, errType, message string) (contentType string, body []byte) {
	b := make([]byte, 0, 96+len(message)+2*len(errType))
	switch kind {
	case KindAnthropicMessages:
		b = append(b, `{"type":"error","error":{"type":`...)
		b = appendString(b, errType)
		b = append(b, `,"message":`...)
		b = appendString(b, message)
		b = append(b, `}}`...)
	case KindGemini:
		b = append(b, `{"error":{"code":`...)
		b = strconv.AppendInt(b, int64(status), 10)
		b = append(b, `,"message":`...)
		b = appendString(b, message)
		b = append(b, `,"status":`...)
		b = appendString(b, rpcStatus(status))
		b = append(b, `,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":`...)
		b = appendString(b, errType)
		b = append(b, `,"domain":"llmproxy"}]}}`...)
	case KindOllama:
		b = append(b, `{"error":`...)
		b = appendString(b, message)
		b = append(b, '}')
	default:
		b = append(b, `{"error":{"message":`...)
		b = appendString(b, message)
		b = append(b, `,"type":`...)
		b = appendString(b, errType)
		b = append(b, `,"param":null,"code":`...)
		b = appendString(b, errType)
		b = append(b, `}}`...)
	}
	return "application/json", b
}

// rpcStatus maps an HTTP status to the google.rpc.Code name Google APIs send
// with it (google/rpc/code.proto); an unlisted 4xx is INVALID_ARGUMENT.
func rpcStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 502, 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	switch {
	case status >= 500:
		return "INTERNAL"
	case status >= 400:
		return "INVALID_ARGUMENT"
	}
	return "UNKNOWN"
}

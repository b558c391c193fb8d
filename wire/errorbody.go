package wire

import (
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// ErrorBody returns an error response body in the provider's own shape, so
// that each official SDK raises an error carrying message, and its content
// type (always "application/json"):
//
//	OpenAI kinds, generic  {"error":{"message":m,"type":t,"param":null,"code":t}}
//	Anthropic              {"type":"error","error":{"type":t,"message":m}}
//	Gemini                 {"error":{"code":status,"message":m,"status":S,"details":[ErrorInfo{reason:t}]}}
//	Ollama                 {"error":m}
//	Bedrock                {"message":m,"__type":t}
//
// S is the google.rpc code name for the HTTP status (400 INVALID_ARGUMENT,
// 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED, 500 INTERNAL, …). Ollama's shape
// has no room for errType. The body is compact JSON without a final newline.
// WriteError writes the errors a provider itself sends, in the same shapes.
func ErrorBody(kind Kind, status int, errType, message string) (contentType string, body []byte) {
	if kind == KindMCP {
		return "application/json", mcpError(status, errType, message)
	}
	return "application/json", errorDoc(kind, errorFields{
		status: status, typ: errType, code: errType, message: message, reason: errType, domain: "llmproxy",
	})
}

// ErrorMessage is the message of an error body in any of the shapes
// ErrorBody writes (error.message, a top-level message, or an error
// string); "" when the body holds none.
func ErrorMessage(body []byte) string {
	for _, p := range []string{"error.message", "message", "error"} {
		if v := gjson.GetBytes(body, p); v.Type == gjson.String && v.Str != "" {
			return v.Str
		}
	}
	return ""
}

// errorFields is what an error body says; each shape takes what it has
// room for.
type errorFields struct {
	status        int
	typ, code     string // OpenAI type and code ("" code is null), Anthropic type
	message       string
	reason        string        // Gemini ErrorInfo reason; "" for no ErrorInfo
	domain        string        // Gemini ErrorInfo domain
	retryAfter    time.Duration // Gemini RetryInfo retryDelay when positive
	streamDetails bool          // Anthropic's mid-stream error carries "details":null
}

// errorDoc builds a compact error body in the provider's shape.
func errorDoc(kind Kind, e errorFields) []byte {
	w := &jsonw{b: make([]byte, 0, 96+len(e.message)+2*len(e.typ))}
	switch kind {
	case KindAnthropicMessages:
		w.Obj().K("type").Str("error").K("error").Obj()
		if e.streamDetails {
			w.K("details").Null()
		}
		w.K("type").Str(e.typ).K("message").Str(e.message).End().End()
	case KindGemini:
		w.Obj().K("error").Obj().
			K("code").Int(int64(e.status)).
			K("message").Str(e.message).
			K("status").Str(rpcStatus(e.status))
		if e.reason != "" || e.retryAfter > 0 {
			w.K("details").Arr()
			if e.reason != "" {
				w.Obj().K("@type").Str("type.googleapis.com/google.rpc.ErrorInfo").
					K("reason").Str(e.reason).K("domain").Str(e.domain).End()
			}
			if e.retryAfter > 0 {
				w.Obj().K("@type").Str("type.googleapis.com/google.rpc.RetryInfo").
					K("retryDelay").Str(retryDelay(e.retryAfter)).End()
			}
			w.End()
		}
		w.End().End()
	case KindOllama:
		w.Obj().K("error").Str(e.message).End()
	case KindBedrockConverse, KindBedrockInvoke:
		// AWS restJson1: the SDKs take the error code from the
		// X-Amzn-Errortype header or, without it, from __type.
		w.Obj().K("message").Str(e.message).K("__type").Str(e.typ).End()
	default:
		w.Obj().K("error").Obj().
			K("message").Str(e.message).
			K("type").Str(e.typ).
			K("param").Null().
			K("code").StrOrNull(e.code).
			End().End()
	}
	return w.Bytes()
}

// retryDelay spells a duration as a google.protobuf.Duration in JSON:
// seconds with up to nine decimals and an "s" ("20s", "0.250s").
func retryDelay(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	return s + "s"
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

// mcpError is ErrorBody's JSON-RPC error: id null (the proxy answers a
// request it could not read, or before reading its id), the code of the
// failure (a parse error for malformed JSON, an invalid request for any
// other 4xx, an internal error otherwise) and data {"type":errType,"status":status}.
func mcpError(status int, errType, message string) []byte {
	code := JSONRPCInternalError
	switch {
	case errType == "invalid_request_error" && strings.Contains(message, "not valid JSON"):
		code = JSONRPCParseError
	case status >= 400 && status < 500:
		code = JSONRPCInvalidRequest
	}
	data := (&jsonw{}).Obj().K("type").Str(errType).K("status").Int(int64(status)).End().Bytes()
	return JSONRPCError(nil, code, message, data)
}

// The JSON-RPC 2.0 error codes llmproxy answers with.
const (
	JSONRPCParseError     = -32700 // the body is not JSON
	JSONRPCInvalidRequest = -32600 // JSON, but not one JSON-RPC message
	JSONRPCInternalError  = -32603 // the proxy failed
)

// JSONRPCError is a JSON-RPC 2.0 error response (MCP's error shape) to the
// request whose id is id (raw JSON; nil writes null), with code, message
// and, when data is not nil, data (raw JSON, written as it is).
func JSONRPCError(id []byte, code int, message string, data []byte) []byte {
	if id == nil {
		id = nullJSON
	}
	w := &jsonw{b: make([]byte, 0, 64+len(message)+len(data))}
	w.Obj().K("jsonrpc").Str("2.0").K("id").Raw(id).K("error").Obj().K("code").Int(int64(code)).K("message").Str(message)
	if data != nil {
		w.K("data").Raw(data)
	}
	return w.End().End().Bytes()
}

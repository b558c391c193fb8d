package wire

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrorAnswer is an error as a provider answers it: the status and body of
// a refused request (WriteError), or an error event that ends a stream the
// provider had begun (StreamError).
type ErrorAnswer struct {
	// Status is the HTTP status, 400 to 599 (Anthropic's 529 included). For
	// a stream error, which follows a 200, it only picks the default Type;
	// 0 there means 500.
	Status int
	// Type is the provider's error type ("rate_limit_error",
	// "overloaded_error", "insufficient_quota"); "" for the provider's own
	// type for Status. Gemini carries an explicit Type as an ErrorInfo
	// reason beside the status name; Ollama has no room for one.
	Type string
	// Message is the error message; "" for the status text.
	Message string
	// RetryAfter, when positive, is sent as Retry-After (whole seconds,
	// rounded up), as Retry-After-Ms on the OpenAI and Anthropic wires
	// (whose SDKs prefer it), and as Gemini's RetryInfo retryDelay.
	RetryAfter time.Duration
}

// WriteError writes a refused request as the provider of kind sends it,
// in its own error shape and content type:
//
//	OpenAI kinds, generic  {"error":{"message","type","param":null,"code"}}, indented by 4 spaces
//	Anthropic              {"type":"error","error":{"type","message"}}
//	Gemini                 {"error":{"code","message","status","details"}}, indented by 2 spaces
//	Ollama                 {"error":message}
//
// Without Type the provider's own type for the status is written: OpenAI
// invalid_request_error (401 with code invalid_api_key), "requests" with
// code rate_limit_exceeded for 429, server_error for 5xx; Anthropic
// invalid_request_error, authentication_error, billing_error,
// permission_error, not_found_error, request_too_large, rate_limit_error,
// api_error, timeout_error, and overloaded_error for 529; Gemini's status
// is the google.rpc name (429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE). A
// status outside 400–599 is ErrInvalidAnswer.
func WriteError(kind Kind, e ErrorAnswer) (Written, error) {
	if e.Status < 400 || e.Status > 599 {
		return Written{}, fmt.Errorf("write %s error: %w: status %d is not an error status", kind, ErrInvalidAnswer, e.Status)
	}
	ct, err := errorContentType(kind)
	if err != nil {
		return Written{}, err
	}
	f := errorFieldsOf(kind, e)
	body := errorDoc(kind, f)
	switch kind {
	case KindGemini:
		body = append(indented(body, "  "), '\n')
	case KindAnthropicMessages, KindOllama, KindBedrockConverse, KindBedrockInvoke:
	default:
		body = append(indented(body, "    "), '\n')
	}
	h := header(ct)
	if kind.Provider() == "bedrock" {
		h.Set("X-Amzn-Errortype", f.typ) // where the AWS SDKs look first
	}
	if e.RetryAfter > 0 {
		secs := (e.RetryAfter + time.Second - 1) / time.Second
		h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
		if kind.Provider() == "openai" || kind == KindGeneric || kind == KindAnthropicMessages {
			ms := (e.RetryAfter + time.Millisecond - 1) / time.Millisecond
			h.Set("Retry-After-Ms", strconv.FormatInt(int64(ms), 10))
		}
	}
	return Written{Status: e.Status, Header: h, Body: body}, nil
}

// errorContentType is the Content-Type of a provider's error bodies.
func errorContentType(kind Kind) (string, error) {
	switch kind {
	case KindOpenAIChat, KindOpenAIResponses, KindEmbeddings, KindGeneric:
		return "application/json; charset=utf-8", nil
	case KindAnthropicMessages:
		return anthropicJSON, nil
	case KindGemini:
		return geminiJSON, nil
	case KindOllama:
		return ollamaJSON, nil
	case KindBedrockConverse, KindBedrockInvoke:
		return converseJSON, nil
	}
	return "", fmt.Errorf("write %s error: %w: unknown API kind", kind, ErrUnsupported)
}

// errorFieldsOf fills in the provider's defaults for an ErrorAnswer.
func errorFieldsOf(kind Kind, e ErrorAnswer) errorFields {
	status := e.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	f := errorFields{status: status, typ: e.Type, code: e.Type, message: e.Message,
		reason: e.Type, domain: "googleapis.com", retryAfter: e.RetryAfter}
	if f.message == "" {
		f.message = statusText(status)
	}
	if f.typ == "" {
		f.typ, f.code = defaultErrorType(kind, status)
	}
	return f
}

// statusText is the reason phrase of a status, including Anthropic's 529.
func statusText(status int) string {
	if status == 529 {
		return "Overloaded"
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error " + strconv.Itoa(status)
}

// defaultErrorType is the provider's own error type (and OpenAI code, ""
// for null) for a status.
func defaultErrorType(kind Kind, status int) (typ, code string) {
	if kind.Provider() == "bedrock" {
		return bedrockErrorType(status), ""
	}
	if kind == KindAnthropicMessages {
		switch status {
		case 401:
			return "authentication_error", ""
		case 402:
			return "billing_error", ""
		case 403:
			return "permission_error", ""
		case 404:
			return "not_found_error", ""
		case 413:
			return "request_too_large", ""
		case 429:
			return "rate_limit_error", ""
		case 504:
			return "timeout_error", ""
		case 529:
			return "overloaded_error", ""
		}
		if status >= 500 {
			return "api_error", ""
		}
		return "invalid_request_error", ""
	}
	switch {
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status == 429:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

// StreamError writes the event with which a provider ends a stream it had
// begun with 200 when it fails: Anthropic's "event: error" (as overloaded
// streams end, without message_stop), OpenAI chat's data-only {"error":…}
// chunk, the Responses "error" event numbered seq, Gemini's alt=sse
// {"error":…} event and Ollama's {"error":…} line. A caller sends the
// first events of a Written stream, then this one, then closes. Gemini's
// JSON-array stream, embeddings and unknown kinds are ErrUnsupported.
func StreamError(kind Kind, o WriteOptions, e ErrorAnswer, seq int) (Event, error) {
	if e.Status != 0 && (e.Status < 400 || e.Status > 599) {
		return Event{}, fmt.Errorf("write %s stream error: %w: status %d is not an error status", kind, ErrInvalidAnswer, e.Status)
	}
	f := errorFieldsOf(kind, e)
	switch kind {
	case KindAnthropicMessages:
		f.streamDetails = true
		return sseNamed("error", padded(errorDoc(kind, f), len(f.message)%16)), nil
	case KindOpenAIChat:
		return sseData(errorDoc(kind, f)), nil
	case KindOpenAIResponses:
		code := f.code
		if code == "" {
			code = f.typ
		}
		w := &jsonw{}
		w.Obj().K("type").Str("error").
			K("code").Str(code).
			K("message").Str(f.message).
			K("param").Null().
			K("sequence_number").Int(int64(seq)).End()
		return sseNamed("error", w.Bytes()), nil
	case KindGemini:
		if o.JSONArray {
			return Event{}, fmt.Errorf("write %s stream error: %w: a JSON-array stream has no error element", kind, ErrUnsupported)
		}
		f.reason = e.Type
		return sseDataCRLF(googleSpaced(errorDoc(kind, f))), nil
	case KindOllama:
		doc := errorDoc(kind, f)
		raw := append(doc, '\n')
		return Event{Raw: raw, Data: raw[:len(doc):len(doc)]}, nil
	case KindBedrockConverse, KindBedrockInvoke:
		return converseException(f), nil
	}
	return Event{}, fmt.Errorf("write %s stream error: %w: no stream for this API kind", kind, ErrUnsupported)
}

// bedrockErrorType is Bedrock Runtime's exception name for a status.
func bedrockErrorType(status int) string {
	switch status {
	case 403:
		return "AccessDeniedException"
	case 404:
		return "ResourceNotFoundException"
	case 408:
		return "ModelTimeoutException"
	case 424:
		return "ModelErrorException"
	case 429:
		return "ThrottlingException"
	case 503:
		return "ServiceUnavailableException"
	}
	if status >= 500 {
		return "InternalServerException"
	}
	return "ValidationException"
}

// converseException is the event stream message with which ConverseStream
// ends when it fails: :message-type exception, :exception-type the
// exception's member name (throttlingException), payload {"message":…}.
func converseException(f errorFields) Event {
	typ := f.typ
	if typ != "" {
		typ = strings.ToLower(typ[:1]) + typ[1:]
	}
	payload := (&jsonw{}).Obj().K("message").Str(f.message).End().Bytes()
	raw, _ := EncodeEventStream([]EventStreamHeader{ // three short headers, a short payload: within every limit
		StringHeader(":exception-type", typ), StringHeader(":content-type", "application/json"), StringHeader(":message-type", "exception"),
	}, payload)
	return Event{Raw: raw, Name: typ, Data: raw[len(raw)-4-len(payload) : len(raw)-4]}
}

package proxy_test

// Bedrock Runtime driven by aws-sdk-go-v2's own bedrockruntime client, with
// static credentials that include a session token, against a fake Bedrock
// that checks every request's SigV4 signature as AWS does. The SDK signs
// for the upstream's host and path (its BaseEndpoint is the fake) and its
// HTTP client sends the signed request to the proxy's /bedrock prefix
// instead, keeping the signed Host: the recipe docs/providers.md gives for
// recording from the real regional endpoint, where a signature made for the
// proxy's address would be refused. The proxy must forward the request as
// signed (it never re-signs), and store none of the credentials.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

// Made-up credentials of the shapes AWS issues: an ASIA access key id of
// temporary credentials, a 40-byte secret and an STS session token. The
// replay ones differ in every part.
var (
	bedrockRecordCreds = aws.Credentials{
		AccessKeyID:     "ASIAQX7EXAMPLE4RECRD",
		SecretAccessKey: "rEc0rdS3cretK3yEXAMPLE/abcdefghijKLMNOPq",
		SessionToken:    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQRECORD" + strings.Repeat("c2Vzc2lvbi10b2tlbg+/", 12) + "==",
	}
	bedrockReplayCreds = aws.Credentials{
		AccessKeyID:     "ASIAQX7EXAMPLE4REPLY",
		SecretAccessKey: "r3playS3cretK3yEXAMPLE/abcdefghijKLMNOPq",
		SessionToken:    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQREPLAY" + strings.Repeat("b3RoZXItdG9rZW4+/", 12) + "==",
	}
)

const (
	bedrockRegion = "us-east-1"
	// bedrockModel has the ':' of Bedrock model ids, which the SDK escapes
	// in the path it signs.
	bedrockModel = "anthropic.claude-3-5-haiku-20241022-v1:0"
)

// sigv4Upstream is a fake Bedrock that refuses any request whose SigV4
// signature is not the one creds make for the request as it arrived, and
// answers the others with answer.
type sigv4Upstream struct {
	t      testing.TB
	srv    *httptest.Server
	creds  aws.Credentials
	answer func(path string, body []byte) (contentType string, out []byte)

	mu       sync.Mutex
	requests []*http.Request
}

func newSigv4Upstream(t testing.TB, creds aws.Credentials, answer func(string, []byte) (string, []byte)) *sigv4Upstream {
	u := &sigv4Upstream{t: t, creds: creds, answer: answer}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *sigv4Upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, r.Clone(context.Background()))
	u.mu.Unlock()
	if err := checkSigV4(r, body, u.creds); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "InvalidSignatureException")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"message":%q}`, err.Error())
		return
	}
	ct, out := u.answer(r.URL.EscapedPath(), body)
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Amzn-Requestid", "5f1c0a57-0000-4000-8000-000000000001")
	w.Write(out)
}

// checkSigV4 recomputes the request's signature from the headers it says
// it signed, with the date it says it was signed at, as AWS does.
func checkSigV4(r *http.Request, body []byte, creds aws.Credentials) error {
	auth := r.Header.Get("Authorization")
	fields := map[string]string{}
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("authorization %q is not SigV4", auth)
	}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	if r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return errors.New("the security token is not the session's")
	}
	signedAt, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date: %w", err)
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != payload {
		return errors.New("x-amz-content-sha256 is not the body's")
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	again.Host = r.Host
	again.ContentLength = int64(len(body))
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, payload, "bedrock", bedrockRegion, signedAt); err != nil {
		return err
	}
	want := again.Header.Get("Authorization")
	if want != auth {
		return fmt.Errorf("signature does not match: got %q, want %q", auth, want)
	}
	return nil
}

// viaProxy is the SDK's HTTP client: it sends each request, signed for the
// upstream, to the proxy's prefix, keeping the signed Host, through next
// (http.DefaultTransport when nil).
type viaProxy struct {
	prefix *url.URL
	next   http.RoundTripper
}

func (v viaProxy) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if err := ownBody(r); err != nil {
		return nil, err
	}
	r.Host = r.URL.Host
	path := r.URL.EscapedPath()
	r.URL.Scheme, r.URL.Host = v.prefix.Scheme, v.prefix.Host
	r.URL.RawPath = strings.TrimSuffix(v.prefix.Path, "/") + path
	r.URL.Path, _ = url.PathUnescape(r.URL.RawPath)
	if v.next != nil {
		return v.next.RoundTrip(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// ownBody gives r a body of its own, a copy of the SDK's: smithy-go closes
// the request body it handed the transport once the response arrives,
// which can make the transport's write of the request, still closing the
// body, fail, and the transport then closes the connection under the
// response being read ("use of closed network connection" in about one
// ConverseStream in a hundred here; aws-sdk-go-v2 issues 1825 and 2737,
// which the SDK meets by retrying, as the tests' clients do not). A copy
// the SDK cannot close keeps the response's connection the transport's.
func ownBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

// bedrockClient is a bedrockruntime client signing for signFor with creds
// and sending to the proxy at proxyPrefix (the /bedrock route), with no
// retries.
func bedrockClient(t testing.TB, signFor, proxyPrefix string, creds aws.Credentials) *bedrockruntime.Client {
	return bedrockClientVia(t, signFor, proxyPrefix, creds, nil)
}

// bedrockClientVia is bedrockClient sending through next.
func bedrockClientVia(t testing.TB, signFor, proxyPrefix string, creds aws.Credentials, next http.RoundTripper) *bedrockruntime.Client {
	t.Helper()
	p, err := url.Parse(proxyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	return bedrockruntime.New(bedrockruntime.Options{
		Region:       bedrockRegion,
		BaseEndpoint: aws.String(signFor),
		Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken),
		HTTPClient:   &http.Client{Transport: viaProxy{p, next}},
		Retryer:      aws.NopRetryer{},
	})
}

// withBedrock adds the bedrock upstream at base.
func withBedrock(base string) func(*proxy.Config) {
	return func(c *proxy.Config) {
		u, _ := url.Parse(base)
		if c.Upstreams == nil {
			c.Upstreams = map[string]*url.URL{}
		}
		c.Upstreams["bedrock"] = u
	}
}

// converseAnswer is the fake's Converse answer.
const converseAnswer = `{"output":{"message":{"role":"assistant","content":[{"text":"Paris is sunny, 22 C."}]}},` +
	`"stopReason":"end_turn","usage":{"inputTokens":12,"outputTokens":7,"totalTokens":19},"metrics":{"latencyMs":321}}`

func converseText(t testing.TB, out *bedrockruntime.ConverseOutput) string {
	t.Helper()
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok || len(msg.Value.Content) == 0 {
		t.Fatalf("converse output %#v holds no message", out.Output)
	}
	text, ok := msg.Value.Content[0].(*types.ContentBlockMemberText)
	if !ok {
		t.Fatalf("converse content %#v is not text", msg.Value.Content[0])
	}
	return text.Value
}

func converseInput(prompt string) *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId: aws.String(bedrockModel),
		Messages: []types.Message{{Role: types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: prompt}}}},
	}
}

// checkNoAWSSecrets fails when b holds any part of creds, or a signature
// the SDK sent.
func checkNoAWSSecrets(t testing.TB, what string, b []byte, creds aws.Credentials, signatures []string) {
	t.Helper()
	for name, secret := range map[string]string{
		"access key id": creds.AccessKeyID, "secret": creds.SecretAccessKey, "session token": creds.SessionToken,
		"session token's start": creds.SessionToken[:40],
	} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the %s", what, name)
		}
	}
	for _, s := range signatures {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds the signature %s", what, s)
		}
	}
	for _, h := range []string{"AWS4-HMAC-SHA256", "aws4_request"} {
		if bytes.Contains(b, []byte(h)) {
			t.Errorf("%s holds %q, a part of the SigV4 Authorization header", what, h)
		}
	}
}

// signatures returns the Signature= values of the requests' Authorization.
func signatures(reqs []*http.Request) []string {
	var out []string
	for _, r := range reqs {
		if _, sig, ok := strings.Cut(r.Header.Get("Authorization"), "Signature="); ok {
			out = append(out, sig)
		}
	}
	return out
}

// TestBedrockSDKConverseNoSecrets records a Converse call, checks that the
// upstream saw the request as the SDK signed it and that neither the
// cassette file nor its export holds a credential or signature, then
// replays with other credentials (another key, token, signature and date),
// both signed for the upstream and sent to the proxy's own address.
func TestBedrockSDKConverseNoSecrets(t *testing.T) {
	ctx := context.Background()
	up := newSigv4Upstream(t, bedrockRecordCreds, func(string, []byte) (string, []byte) {
		return "application/json", []byte(converseAnswer)
	})
	path := cassettePath(t)
	rec := startProxy(t, proxy.ModeRecord, path, up.srv.URL, withBedrock(up.srv.URL))
	out, err := bedrockClient(t, up.srv.URL, rec.URL()+"/bedrock", bedrockRecordCreds).Converse(ctx, converseInput("Weather in Paris?"))
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if got := converseText(t, out); got != "Paris is sunny, 22 C." || out.StopReason != types.StopReasonEndTurn || *out.Usage.TotalTokens != 19 {
		t.Fatalf("record: text %q stop %q usage %v, want the fake's answer", got, out.StopReason, *out.Usage.TotalTokens)
	}
	rec.stop()
	up.mu.Lock()
	reqs := up.requests
	up.mu.Unlock()
	if len(reqs) != 1 || reqs[0].URL.EscapedPath() != "/model/"+strings.ReplaceAll(bedrockModel, ":", "%3A")+"/converse" {
		t.Fatalf("upstream saw %d requests (%v), want one Converse with the escaped model id", len(reqs), reqs[0].URL.EscapedPath())
	}
	sigs := signatures(reqs)
	if len(sigs) != 1 {
		t.Fatalf("the SDK sent no signature the fake could read")
	}

	checkNoAWSSecrets(t, "the cassette file", rawCassette(t, path), bedrockRecordCreds, sigs)
	c, err := cassette.Open(path, cassette.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := c.Export(&export); err != nil {
		t.Fatal(err)
	}
	all, err := c.All()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkNoAWSSecrets(t, "the export", export.Bytes(), bedrockRecordCreds, sigs)
	h := all[0].Request.Headers
	for _, name := range cassette.SigningHeaders {
		if v := h.Values(name); len(v) != 0 {
			t.Errorf("the cassette stores %s: %q", name, v)
		}
	}
	for _, name := range []string{"Authorization", "X-Amz-Security-Token"} {
		if v := h.Values(name); len(v) != 1 || v[0] != cassette.Redacted {
			t.Errorf("the cassette stores %s as %q, want [%s]", name, v, cassette.Redacted)
		}
	}

	up.srv.Close()
	// The replay credentials give another key, token and signature; the
	// date is not stored (SigningHeaders), so it cannot take part either.
	for _, toProxy := range []bool{false, true} {
		rep := startProxy(t, proxy.ModeReplay, path, "", func(c *proxy.Config) { c.Upstreams = map[string]*url.URL{} }, withBedrock(up.srv.URL))
		signFor, prefix := up.srv.URL, rep.URL()+"/bedrock"
		if toProxy { // the SDK pointed at the proxy, as replay-only tests may
			signFor, prefix = rep.URL()+"/bedrock", rep.URL()
		}
		out, err := bedrockClient(t, signFor, prefix, bedrockReplayCreds).Converse(ctx, converseInput("Weather in Paris?"))
		if err != nil {
			t.Fatalf("replay signed for %s: %v", signFor, err)
		}
		if got := converseText(t, out); got != "Paris is sunny, 22 C." {
			t.Errorf("replay signed for %s: text %q", signFor, got)
		}
		rep.stop()
	}
}

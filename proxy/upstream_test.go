package proxy_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/llmproxy/llmproxy/cassette"
	"github.com/llmproxy/llmproxy/proxy"
)

func TestParseUpstreamURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:11434": true, "https://api.openai.com/": true, "https://example.com/base/v1": true,
		"ftp://example.com": false, "api.openai.com": false, "http://": false, "https:///v1": false, "::": false, "": false,
	} {
		u, err := proxy.ParseUpstreamURL(raw)
		switch {
		case ok && (err != nil || u.String() != raw):
			t.Errorf("ParseUpstreamURL(%q) = %v, %v; want the URL", raw, u, err)
		case !ok && (err == nil || !errors.Is(err, proxy.ErrConfig)):
			t.Errorf("ParseUpstreamURL(%q) = %v, %v; want an error wrapping ErrConfig", raw, u, err)
		}
	}
}

func TestCheckUpstreamName(t *testing.T) {
	for name, ok := range map[string]bool{
		"openai": true, "azure-eu": true, "a.b": true,
		"": false, "a/b": false, "a?b": false, "a#b": false, "_llmproxy": false,
	} {
		err := proxy.CheckUpstreamName(name)
		if ok != (err == nil) || (err != nil && !errors.Is(err, proxy.ErrConfig)) {
			t.Errorf("CheckUpstreamName(%q) = %v, want ok=%v (errors wrap ErrConfig)", name, err, ok)
		}
	}
}

// New applies the same rules to the upstreams it is given.
func TestNewChecksUpstreams(t *testing.T) {
	c, err := cassette.Open(cassettePath(t), cassette.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	good := &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	for name, cfg := range map[string]proxy.Config{
		"bad name":    {Upstreams: map[string]*url.URL{"_x": good}},
		"nil URL":     {Upstreams: map[string]*url.URL{"x": nil}},
		"ftp URL":     {Upstreams: map[string]*url.URL{"x": {Scheme: "ftp", Host: "h"}}},
		"bad default": {Upstreams: map[string]*url.URL{"x": good}, Default: &url.URL{Scheme: "http"}},
	} {
		cfg.Cassette = c
		if _, err := proxy.New(cfg); !errors.Is(err, proxy.ErrConfig) {
			t.Errorf("%s: New = %v, want an error wrapping ErrConfig", name, err)
		}
	}
}

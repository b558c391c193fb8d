module github.com/llmproxy/llmproxy/bench

go 1.26.0

require github.com/llmproxy/llmproxy v0.0.0

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.42.0 // indirect
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/tidwall/gjson v1.20.4
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	github.com/tidwall/sjson v1.2.10 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.yaml.in/yaml/v4 v4.0.0
	golang.org/x/sys v0.48.0 // indirect
	gopkg.in/dnaeon/go-vcr.v4 v4.0.8
)

replace github.com/llmproxy/llmproxy => ../

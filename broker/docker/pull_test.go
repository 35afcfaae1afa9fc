package docker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docker/docker/pkg/jsonmessage"
)

// A pull's progress stream as the engine sends it (shape of Docker 20.10's
// /images/create answer): two layers to download, one already present.
const pullStream = `{"status":"Pulling from rmqtorture/rabbitmq","id":"4.0-trixie"}
{"status":"Already exists","progressDetail":{},"id":"aaa"}
{"status":"Pulling fs layer","progressDetail":{},"id":"bbb"}
{"status":"Pulling fs layer","progressDetail":{},"id":"ccc"}
{"status":"Downloading","progressDetail":{"current":45200000,"total":100000000},"progress":"[==>   ]","id":"bbb"}
{"status":"Downloading","progressDetail":{"current":1000000,"total":20000000},"progress":"[>     ]","id":"ccc"}
{"status":"Verifying Checksum","progressDetail":{},"id":"ccc"}
{"status":"Download complete","progressDetail":{},"id":"ccc"}
{"status":"Downloading","progressDetail":{"current":100000000,"total":100000000},"id":"bbb"}
{"status":"Download complete","progressDetail":{},"id":"bbb"}
{"status":"Extracting","progressDetail":{"current":32768,"total":100000000},"id":"bbb"}
{"status":"Pull complete","progressDetail":{},"id":"bbb"}
{"status":"Pull complete","progressDetail":{},"id":"ccc"}
{"status":"Digest: sha256:0123"}
{"status":"Status: Downloaded newer image for 127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie"}
`

func TestPullStatusLines(t *testing.T) {
	ps := &pullStatus{image: "127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie", layers: map[string]*layerProgress{}}
	lines := []string{ps.line()}
	dec := json.NewDecoder(strings.NewReader(pullStream))
	for dec.More() {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if ps.add(m) {
			lines = append(lines, ps.line())
		}
	}
	const p = "pulling 127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie"
	want := []string{
		p,
		p, p, // layers announced, sizes unknown
		p + ": 45.2 MB of 100.0 MB",
		p + ": 46.2 MB of 120.0 MB",
		p + ": 65.2 MB of 120.0 MB", // verifying: ccc's 20 MB are in
		p + ": 65.2 MB of 120.0 MB",
		p + ": 120.0 MB of 120.0 MB",
		p + ": 120.0 MB of 120.0 MB",
		p + ": 120.0 MB of 120.0 MB, extracting",
		p + ": 120.0 MB of 120.0 MB", // bbb complete, ccc never extracted (a stream out of order)
		p + ": 120.0 MB of 120.0 MB",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestOwnHubImageIsNeverPulledFromDockerHub(t *testing.T) {
	for img, want := range map[string]bool{
		"rmqtorture/rabbitmq:4.0-trixie":                 true,
		"docker.io/rmqtorture/rabbitmq:4.3-forky":        true,
		"127.0.0.1:5000/rmqtorture/rabbitmq:4.0-trixie":  false,
		"registry.example:5000/rmqtorture/rabbitmq:3.10": false,
		"rabbitmq:4.1-management":                        false,
		"rabbitmq":                                       false,
		"Not A Reference":                                false,
	} {
		if got := ownHubImage(img); got != want {
			t.Errorf("ownHubImage(%q) = %v, want %v", img, got, want)
		}
	}
}

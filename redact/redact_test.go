package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://u:s3cr3tpass@127.0.0.1:2376":   "tcp://u:xxxxx@127.0.0.1:2376",
		"amqp://guest:guest@127.0.0.1:5672/":  "amqp://guest:xxxxx@127.0.0.1:5672/",
		"unix:///var/run/docker.sock":         "unix:///var/run/docker.sock",
		"tcp://u@host:1":                      "tcp://u@host:1",
		"tcp://u:p%zz@host:1":                 "tcp://xxxxx@host:1", // not a URL net/url accepts: masked as text
		"amqps://a:b@c@broker.example:5671/v": "amqps://a:xxxxx@broker.example:5671/v",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		// The Docker client's own error quotes DOCKER_HOST, followed by "." and ":".
		"cannot reach the Docker Engine at tcp://u:s3cr3tpass@127.0.0.1:1: Cannot connect to the Docker daemon at tcp://u:s3cr3tpass@127.0.0.1:1. Is the docker daemon running?": "cannot reach the Docker Engine at tcp://u:xxxxx@127.0.0.1:1: Cannot connect to the Docker daemon at tcp://u:xxxxx@127.0.0.1:1. Is the docker daemon running?",
		`Get "http://u:p@h:2375/_ping": dial tcp`:                `Get "http://u:xxxxx@h:2375/_ping": dial tcp`,
		"keeping amqp=amqp://guest:guest@127.0.0.1:5672/ name=x": "keeping amqp=amqp://guest:xxxxx@127.0.0.1:5672/ name=x",
		"no URL here: user:pass@host":                            "no URL here: user:pass@host",
		"mail a@b.c, see https://example.com/a@b":                "mail a@b.c, see https://example.com/a@b",
		"tcp://u:p%zz@host:1 and tcp://v:w@h":                    "tcp://xxxxx@host:1 and tcp://v:xxxxx@h",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"\x1b[38;5;160m2025-01-01 [error] <0.1.0> boot failed\x1b[0m": "2025-01-01 [error] <0.1.0> boot failed",
		"\x1b[1;31mred\x1b[m plain":                                   "red plain",
		"\x1b]0;window title\x07text":                                 "text",
		"\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\":           "link",
		"progress\r100%\x1b[K done\x07":                               "progress100% done",
		"\x1b7saved\x1b8 \x1bc":                                       "saved ",
		"\u009b31mC1\u009b0m":                                         "C1",
		"tab\tand\nnewline stay":                                      "tab\tand\nnewline stay",
		"café ünïcode stays":                                          "café ünïcode stays",
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestForeign(t *testing.T) {
	in := "\x1b[31mconnecting to amqp://admin:hunter2@rabbit:5672\x1b[0m"
	if got, want := Foreign(in), "connecting to amqp://admin:xxxxx@rabbit:5672"; got != want {
		t.Fatalf("Foreign = %q, want %q", got, want)
	}
}

func TestStrings(t *testing.T) {
	type inner struct {
		Detail string
		Nums   []float64
	}
	type doc struct {
		Error   string
		Reasons []string
		Events  []inner
		Ptr     *inner
		Any     any
		Labels  map[string]string
		hidden  string
		Count   int
	}
	const secret = "tcp://u:s3cr3tpass@127.0.0.1:1"
	d := &doc{
		Error:   "cannot reach " + secret,
		Reasons: []string{"ok", "\x1b[31mred\x1b[0m " + secret},
		Events:  []inner{{Detail: secret, Nums: []float64{1, 2}}},
		Ptr:     &inner{Detail: secret},
		Any:     &inner{Detail: secret},
		Labels:  map[string]string{secret: secret, "\u009d8;;x\u009cC1": "\u009b31mC1"},
		hidden:  secret,
		Count:   3,
	}
	Strings(d)
	const want = "tcp://u:xxxxx@127.0.0.1:1"
	if d.Error != "cannot reach "+want || d.Reasons[0] != "ok" || d.Reasons[1] != "red "+want ||
		d.Events[0].Detail != want || d.Ptr.Detail != want || d.Any.(*inner).Detail != want ||
		d.Labels[want] != want || len(d.Labels) != 2 || d.Labels["C1"] != "C1" || d.hidden != secret || d.Count != 3 || d.Events[0].Nums[1] != 2 {
		t.Fatalf("%+v", d)
	}
}

// A registered password is masked wherever a library quotes it: without
// the URL's scheme, or escaped; a short one only inside URLs.
func TestSecret(t *testing.T) {
	SecretOf("http://alice:S3cret@PW@127.0.0.1:1")
	SecretOf("amqp://u:pw@h:5672/")
	for in, want := range map[string]string{
		`Head "http://alice:S3cret%40PW@127.0.0.1:1/_ping": lookup alice:S3cret@PW@127.0.0.1: no such host`: `Head "http://alice:xxxxx@127.0.0.1:1/_ping": lookup alice:xxxxx@127.0.0.1: no such host`,
		"password S3cret%40PW or S3cret@PW":   "password xxxxx or xxxxx",
		"a pw stays, amqp://u:pw@h:5672/ not": "a pw stays, amqp://u:xxxxx@h:5672/ not",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// A password net/url cannot read as one (a "/" or "#" in it, no scheme)
// is registered all the same.
func TestSecretOfOddURLs(t *testing.T) {
	SecretOf("http://alice:pa/ss#w0rd@127.0.0.1:1")
	SecretOf("alice:NoSchemePw@127.0.0.1:1")
	for in, want := range map[string]string{
		"lookup alice:pa/ss#w0rd@127.0.0.1": "lookup alice:xxxxx@127.0.0.1",
		"dial alice:NoSchemePw@127.0.0.1:1": "dial alice:xxxxx@127.0.0.1:1",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

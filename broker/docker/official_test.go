package docker

import "testing"

func TestOfficialFor(t *testing.T) {
	for _, tc := range []struct{ img, registry, want string }{
		{"rmqtorture/rabbitmq:4.0-trixie", "", "rabbitmq:4.0"},
		{"rmqtorture/rabbitmq:3.10-bookworm", "docker.io", "rabbitmq:3.10"},
		{"rmqtorture/rabbitmq:4.3-forky", "127.0.0.1:5000", "127.0.0.1:5000/rabbitmq:4.3"},
		{"docker.io/rmqtorture/rabbitmq:4.0-trixie", "", "rabbitmq:4.0"},
		{"registry.example:5000/rmqtorture/rabbitmq:4.0-trixie", "", ""}, // a registry of the user's: theirs
		{"rmqtorture/rabbitmq:latest", "", ""},
		{"rmqtorture/other:4.0-trixie", "", ""},
		{"rabbitmq:4.0", "", ""},
		{"rmqtorture/rabbitmq", "", ""},
		{"rmqtorture/rabbitmq:4.0-trixie", "bad registry", ""},
	} {
		if got := OfficialFor(tc.img, tc.registry); got != tc.want {
			t.Errorf("OfficialFor(%q, %q) = %q, want %q", tc.img, tc.registry, got, tc.want)
		}
	}
}

package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
)

// The configuration lands where RabbitMQ reads it: a conf.d file of
// "key = value" lines in key order, and advanced.config as one Erlang term.
func TestConfigArchive(t *testing.T) {
	b, err := configArchive(map[string]string{"vm_memory_high_watermark.relative": "0.6", "consumer_timeout": "5000"},
		map[string]int{"channel_tick_interval": 1000, "a_key": -1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got[h.Name] = string(body)
		if h.Typeflag == tar.TypeReg && h.Mode != 0o644 {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
	}
	want := map[string]string{
		"conf.d/": "",
		"conf.d/90-rmqtorture.conf": "# Written by rmqtorture from the scenario's broker.config.\n" +
			"consumer_timeout = 5000\nvm_memory_high_watermark.relative = 0.6\n",
		"advanced.config": "% Written by rmqtorture from the scenario's broker.advanced_config.\n" +
			"[{rabbit, [{a_key, -1}, {channel_tick_interval, 1000}]}].\n",
	}
	if len(got) != len(want) {
		t.Fatalf("files %v", got)
	}
	for name, body := range want {
		if got[name] != body {
			t.Errorf("%s:\n got %q\nwant %q", name, got[name], body)
		}
	}
	only, err := configArchive(nil, map[string]int{"channel_tick_interval": 1000})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := tar.NewReader(bytes.NewReader(only)).Next(); err != nil || h.Name != "advanced.config" {
		t.Fatalf("advanced only: first entry %+v %v", h, err)
	}
}

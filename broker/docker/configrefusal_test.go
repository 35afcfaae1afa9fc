package docker

import "testing"

// The log of a 4.0.5 broker given an unknown key and a value of the wrong
// type in broker.config, as it ended its boot.
const refusedLog = `2026-12-04 17:39:06.399360+00:00 [error] <0.153.0> You've tried to set nosuch.setting, but there is no setting with that name.
2026-12-04 17:39:06.450146+00:00 [error] <0.153.0>   Did you mean one of these?
2026-12-04 17:39:06.533153+00:00 [error] <0.153.0>     product.version
2026-12-04 17:39:06.535934+00:00 [error] <0.153.0> Error preparing configuration in phase transform_datatypes:
2026-12-04 17:39:06.536780+00:00 [error] <0.153.0>   - Conf file attempted to set unknown variable: nosuch.setting
2026-12-04 17:39:06.537278+00:00 [error] <0.153.0>   - Error transforming datatype for: consumer_timeout
2026-12-04 17:39:06.537868+00:00 [error] <0.153.0>   - "banana" cannot be converted to a(n) integer
BOOT FAILED
===========
Error during startup: {error,failed_to_prepare_configuration}
`

func TestConfigRefusal(t *testing.T) {
	want := `broker.config.nosuch.setting: no such setting; broker.config.consumer_timeout: "banana" cannot be converted to a(n) integer`
	if got := configRefusal(refusedLog); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := configRefusal("2026-12-04 17:39:06.399360+00:00 [notice] <0.44.0> Logging: configured log handlers are now ACTIVE\nKernel pid terminated"); got != "" {
		t.Fatalf("a log with no refusal: %q", got)
	}
}

package docker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// refusedBootLog is a broker's log when RabbitMQ refuses its configuration
// (rabbit_prelaunch_conf on 4.0): the refusal first, then crash reports of
// any length, here crash lines after it.
func refusedBootLog(crash int) string {
	var b strings.Builder
	b.WriteString("2026-12-05 00:43:34.737782+00:00 [error] <0.153.0> Error preparing configuration in phase transform_datatypes:\n")
	b.WriteString("2026-12-05 00:43:34.737955+00:00 [error] <0.153.0>   - Error transforming datatype for: consumer_timeout\n")
	b.WriteString("2026-12-05 00:43:34.738176+00:00 [error] <0.153.0>   - \"banana\" cannot be converted to a(n) integer\n")
	b.WriteString("2026-12-05 00:43:34.738332+00:00 [error] <0.153.0>   - Conf file attempted to set unknown variable: nosuch.setting\n")
	b.WriteString("\nBOOT FAILED\n")
	for i := range crash {
		fmt.Fprintf(&b, "2026-12-05 00:43:35.741921+00:00 [error] <0.151.0>     crash report line %d\n", i)
	}
	b.WriteString("Crash dump is being written to: erl_crash.dump...done\n")
	return b.String()
}

// exitedEngine is a Docker Engine API whose container c1 has exited with
// code 1 and whose log is log, served as `docker logs --tail` would.
func exitedEngine(t *testing.T, log string) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/c1/json"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"Id":"c1","State":{"Status":"exited","ExitCode":1}}`)
		case strings.HasSuffix(r.URL.Path, "/containers/c1/logs"):
			lines := strings.SplitAfter(strings.TrimSuffix(log, "\n"), "\n")
			if tail := r.URL.Query().Get("tail"); tail != "all" && tail != "" {
				var n int
				fmt.Sscan(tail, &n)
				lines = lines[max(0, len(lines)-n):]
			}
			sw := stdcopy.NewStdWriter(w, stdcopy.Stdout)
			_, _ = io.WriteString(sw, strings.Join(lines, ""))
		default:
			http.Error(w, `{"message":"unexpected call"}`, http.StatusNotFound)
		}
	}))
	return fakeEngine(t, srv)
}

// fakeEngine is a Docker client (API 1.41) of the engine API srv serves,
// closed with the test.
func fakeEngine(t *testing.T, srv *httptest.Server) *client.Client {
	t.Helper()
	t.Cleanup(srv.Close)
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+strings.TrimPrefix(srv.URL, "http://")), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// TestRefusedConfigurationNamedWhateverFollowsIt: a broker that refused its
// configuration is reported with the refused keys however long the crash
// reports after the refusal are (a 200-line tail once missed it: the
// refusal had scrolled out).
func TestRefusedConfigurationNamedWhateverFollowsIt(t *testing.T) {
	const want = `RabbitMQ refused the configuration rmqtorture wrote from the scenario's broker.config: broker.config.consumer_timeout: "banana" cannot be converted to a(n) integer; broker.config.nosuch.setting: no such setting`
	for _, crash := range []int{10, 500} {
		c := &Container{cli: exitedEngine(t, refusedBootLog(crash)), ID: "c1", Name: "rmqt-c1"}
		err := c.cannotBecomeReady(context.Background(), 5*time.Second)
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%d crash lines: err %v, want one ending %q", crash, err, want)
		}
	}
}

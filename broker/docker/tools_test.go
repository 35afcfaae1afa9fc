package docker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A restore record names the recoveries of faults made of the broker's
// tools as steps, and runs only those of the action table: a record names
// a command, and a file can be edited, so a command that is no action's
// recovery is refused before anything is run in the container.
func TestRestoreRunsOnlyKnownToolRecoveries(t *testing.T) {
	start := scenario.StopApp.Tool().Recover
	if !knownRecovery(start) || knownRecovery([]string{"sh", "-c", "rm -rf /"}) || knownRecovery(scenario.StopApp.Tool().Inject) {
		t.Fatal("knownRecovery: the recovery of stop-app only")
	}
	var execs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/containers/c1/json"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"Id":"c1","State":{"Status":"running","Running":true}}`)
		case strings.Contains(r.URL.Path, "/exec"):
			execs.Add(1)
			http.Error(w, `{"message":"no exec in this test"}`, http.StatusInternalServerError)
		default:
			http.Error(w, `{"message":"unexpected call"}`, http.StatusNotFound)
		}
	}))
	cli := fakeEngine(t, srv)
	file := filepath.Join(t.TempDir(), "c1.json")
	if err := os.WriteFile(file, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Restore{Container: "c1", Name: "rabbit", File: file, Commands: [][]string{{"sh", "-c", "rm -rf /"}}}
	if got := r.Steps(); !slices.Equal(got, []string{"run sh -c rm -rf /"}) {
		t.Fatalf("steps %q", got)
	}
	_, err := r.Apply(context.Background(), cli)
	if err == nil || !strings.Contains(err.Error(), `the restore record asks to run "sh -c rm -rf /", which is no fault action's recovery: not run`) || execs.Load() != 0 {
		t.Fatalf("err %v, %d exec calls", err, execs.Load())
	}
	r.Commands = [][]string{start}
	if _, err := r.Apply(context.Background(), cli); err == nil || !strings.Contains(err.Error(), "rabbitmqctl -q start_app") || execs.Load() != 1 {
		t.Fatalf("the known recovery was not run: %v, %d exec calls", err, execs.Load())
	}
}

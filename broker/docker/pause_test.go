package docker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/client"
)

// pauseEngine is a Docker Engine API that answers pause with fail(n) for
// the n-th call (1-based): "" is success, else a 500 with that message.
func pauseEngine(t *testing.T, fail func(n int) string) (*client.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/containers/c1/pause") {
			http.Error(w, `{"message":"unexpected call"}`, http.StatusNotFound)
			return
		}
		msg := fail(int(calls.Add(1)))
		if msg == "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"`+msg+`"}`)
	}))
	t.Cleanup(srv.Close)
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+strings.TrimPrefix(srv.URL, "http://")), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	return cli, &calls
}

const unableToFreeze = "Cannot pause container c1: OCI runtime pause failed: unable to freeze: unknown"

func TestPauseRetriesUnableToFreeze(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name      string
		fail      func(n int) string
		wantCalls int32
		wantErr   string // "" for success
	}{
		{"frozen on the third try", func(n int) string {
			if n < 3 {
				return unableToFreeze
			}
			return ""
		}, 3, ""},
		{"never frozen", func(int) string { return unableToFreeze }, freezeAttempts,
			"unable to freeze: unknown (after 5 tries)"},
		{"another error is not retried", func(int) string { return "Container c1 is not running" }, 1,
			"Container c1 is not running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cli, calls := pauseEngine(t, c.fail)
			err := pauseRetrying(context.Background(), cli, "c1", log)
			if got := calls.Load(); got != c.wantCalls {
				t.Errorf("pause calls %d, want %d", got, c.wantCalls)
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("err %v, want none", err)
			case c.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), c.wantErr)):
				t.Errorf("err %v, want one ending %q", err, c.wantErr)
			}
		})
	}
}

func TestPauseRetryStopsAtCancel(t *testing.T) {
	cli, calls := pauseEngine(t, func(int) string { return unableToFreeze })
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// A cancelled context ends the tries: at most the first call is made.
	cancel()
	err := pauseRetrying(ctx, cli, "c1", log)
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err %v, want the cancel named", err)
	}
	if got := calls.Load(); got > 1 {
		t.Fatalf("pause calls %d after the cancel, want at most 1", got)
	}
}

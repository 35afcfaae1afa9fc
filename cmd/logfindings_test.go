package cmd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/scenario"
)

type fakeLog struct {
	since time.Time
	found []scenario.BrokerLogFinding
	err   error
}

func (f *fakeLog) ScanLog(_ context.Context, since time.Time) ([]scenario.BrokerLogFinding, error) {
	f.since = since
	return f.found, f.err
}

// The log is scanned from just before the run started; what was found is
// kept even when the read failed part way, which is a warning.
func TestScanBrokerLogIntoResult(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	found := []scenario.BrokerLogFinding{{Signature: "restarting-crashed-queue", Count: 1, FirstLine: "Restarting crashed queue 'q'"}}
	b := &fakeLog{found: found, err: errors.New("read the broker log: unexpected EOF")}
	res := &scenario.Result{StartedAt: start}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C: the scan still runs
	scanBrokerLog(ctx, quiet, b, res)
	if !b.since.Equal(start.Add(-time.Second)) || !reflect.DeepEqual(res.BrokerLogFindings, found) ||
		!reflect.DeepEqual(res.Warnings, []string{"the broker log was not fully scanned for loss signatures: read the broker log: unexpected EOF"}) {
		t.Fatalf("since %s, result %+v", b.since, res)
	}
}

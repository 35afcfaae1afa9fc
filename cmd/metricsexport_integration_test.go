package cmd

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// metricsScenario is a burst of 3,000 confirm-window orders paced at
// 1,000 msg/s: 3 s in which a scrape every 100 ms finds it under way.
const metricsScenario = `version: 1
scenarios:
  - name: metrics
    load: {messages: 3000, modes: [confirm-window], rate: 1000}
`

// --metrics-listen serves the burst under way to a scrape during the run
// (its counters, in OpenMetrics when asked), and --metrics-file holds the
// result as the run ended: it passes client_golang's lint, and its ledger
// and verdict are result.json's.
func TestMetricsExport(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	file := filepath.Join(t.TempDir(), "rmqtorture.prom")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var during string // the first scrape that saw the burst's ids sent
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil && during == "" {
			if body := scrape(addr); strings.Contains(body, `rmqtorture_burst_messages_total{event="sent",mode="confirm-window",scenario="metrics"}`) {
				during = body
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	r := runScenarioFile(t, metricsScenario, "metrics", "--metrics-file", file, "--metrics-listen", addr)
	stop()
	wg.Wait()
	if during == "" || !strings.Contains(during, "# TYPE rmqtorture_burst_messages counter") || !strings.HasSuffix(during, "# EOF\n") {
		t.Fatalf("no OpenMetrics scrape saw the burst under way; last:\n%s", during)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if problems, err := promlint.New(bytes.NewReader(data)).Lint(); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(bytes.TrimSuffix(data, []byte("# EOF\n"))))
	if err != nil {
		t.Fatal(err)
	}
	m := mode(t, r, scenario.ConfirmWindow)
	for class, want := range map[string]int{"sent": m.Sent, "confirmed": m.Confirmed, "lost": m.Lost, "in_doubt": m.InDoubt, "duplicates": m.Duplicates} {
		if got := value(families["rmqtorture_messages"], "class", class); got != float64(want) {
			t.Errorf("rmqtorture_messages{class=%q} %v, result.json %d", class, got, want)
		}
	}
	if got := value(families["rmqtorture_verdict"], "status", string(r.Verdict.Status)); got != 1 || m.Sent != r.Messages {
		t.Errorf("rmqtorture_verdict{status=%q} %v; sent %d of %d", r.Verdict.Status, got, m.Sent, r.Messages)
	}
}

// scrape GETs addr's /metrics asking for OpenMetrics; "" on any error.
func scrape(addr string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// value is the value of the series of f whose label name is value
// (the first; -1 when none).
func value(f *dto.MetricFamily, name, want string) float64 {
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name && l.GetValue() == want {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Metrics export (docs/metrics-export.md): --metrics-file writes the
// results as OpenMetrics text when each scenario ends (all of this run's
// scenarios so far, atomically); --metrics-listen serves them live for
// Prometheus while the run goes on: the burst under way as it counts, and
// every mode and scenario that ended as the file has them.

// addMetricsFlags adds --metrics-file and --metrics-listen to run.
func (o *runOpts) addMetricsFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&o.metricsFile, "metrics-file", "", "also write the results as OpenMetrics text to this file when each scenario ends (for a Prometheus textfile collector or a CI artifact)")
	fl.StringVar(&o.metricsListen, "metrics-listen", "", "serve live Prometheus metrics on HOST:PORT (e.g. 127.0.0.1:9419) at /metrics while the run goes on")
}

// startMetrics starts the --metrics-listen server, before anything else
// starts: an address that cannot be listened on is a bad flag (exit 2).
// --metrics-file is checked with the other outputs (preflight).
func (o *runOpts) startMetrics(log *slog.Logger) error {
	if o.metricsListen == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(o.metricsListen); err != nil || port == "" {
		return usageErr(fmt.Errorf("--metrics-listen %q: want HOST:PORT, e.g. 127.0.0.1:9419", o.metricsListen))
	}
	ln, err := net.Listen("tcp", o.metricsListen)
	if err != nil {
		return usageErr(fmt.Errorf("--metrics-listen %s: %w", o.metricsListen, err))
	}
	o.live = &liveMetrics{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(o.live)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	o.live.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := o.live.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the --metrics-listen server stopped", "err", err)
		}
	}()
	log.Info("serving live metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// stopMetrics stops the --metrics-listen server (a scrape under way gets
// a second to finish).
func (o *runOpts) stopMetrics() {
	if o.live == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = o.live.srv.Shutdown(ctx)
}

// scenarioEnded adds res to the metrics and the JUnit report: the files
// are written again with every scenario so far, and the live server shows
// res's families.
func (o *runOpts) scenarioEnded(res *scenario.Result) error {
	o.live.scenarioEnded(res)
	if err := o.writeJUnit(res); err != nil {
		return err
	}
	if o.metricsFile == "" {
		return nil
	}
	o.metricResults = append(o.metricResults, res)
	err := writeAtomic(o.metricsFile, func(f *os.File) error { return reports.OpenMetrics(f, o.metricResults...) })
	if err != nil {
		return fmt.Errorf("write --metrics-file %s: %w", o.metricsFile, err)
	}
	return nil
}

// liveMetrics is the --metrics-listen collector: the burst under way (its
// live series and timeline) and every mode and scenario that ended.
type liveMetrics struct {
	srv *http.Server

	mu       sync.Mutex
	scenario string
	runID    string
	mode     scenario.Mode
	s        *metrics.Series
	tl       *metrics.Timeline
	modes    []scenario.ModeResult // the current scenario's modes that ended
	ended    []*scenario.Result    // the scenarios that ended
}

// The live families: the burst under way, as it counts.
var (
	burstMessagesDesc = prometheus.NewDesc("rmqtorture_burst_messages_total", "The burst under way: publish attempts (event=\"published\", republishes included), distinct ids sent, basic.acks, basic.nacks and basic.returns received, and deliveries of its ids, so far.", []string{"scenario", "mode", "event"}, nil)
	burstInFlightDesc = prometheus.NewDesc("rmqtorture_burst_in_flight_messages", "The burst under way: published in a confirm mode, awaiting basic.ack or basic.nack.", []string{"scenario", "mode"}, nil)
	burstInDoubtDesc  = prometheus.NewDesc("rmqtorture_burst_in_doubt_messages", "The burst under way: ids in doubt (their confirm was lost), or republished after it and not yet acked.", []string{"scenario", "mode"}, nil)
	brokerUpDesc      = prometheus.NewDesc("rmqtorture_broker_up", "1 while the broker accepts AMQP as far as the burst under way knows, 0 while a fault holds it down, paused, disconnected or blocked.", []string{"scenario", "mode"}, nil)
)

// onBurst follows a burst as it starts (engine.Runner.OnBurst).
func (l *liveMetrics) onBurst(m scenario.Mode, s *metrics.Series, tl *metrics.Timeline) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mode, l.s, l.tl = m, s, tl
}

// startScenario names the scenario (and its run id) whose bursts follow.
func (l *liveMetrics) startScenario(name, runID string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scenario, l.runID, l.modes, l.s, l.tl = name, runID, nil, nil, nil
}

// modeDone wraps next (a Runner.OnModeDone): the mode's burst leaves the
// live families and its result joins the ended ones.
func (l *liveMetrics) modeDone(next func(scenario.ModeResult)) func(scenario.ModeResult) {
	if l == nil {
		return next
	}
	return func(r scenario.ModeResult) {
		l.mu.Lock()
		l.modes = append(l.modes, r)
		l.s, l.tl = nil, nil
		l.mu.Unlock()
		next(r)
	}
}

// scenarioEnded replaces the scenario's ended modes by its result.
func (l *liveMetrics) scenarioEnded(res *scenario.Result) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = append(l.ended, res)
	l.modes, l.s, l.tl = nil, nil, nil
}

// Describe sends the live and the result families.
func (l *liveMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{burstMessagesDesc, burstInFlightDesc, burstInDoubtDesc, brokerUpDesc} {
		ch <- d
	}
	reports.ResultCollector{}.Describe(ch)
}

// Collect sends the burst under way, the current scenario's ended modes
// and the ended scenarios.
func (l *liveMetrics) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	scen, runID, mode, s, tl := l.scenario, l.runID, l.mode, l.s, l.tl
	modes := append([]scenario.ModeResult(nil), l.modes...)
	ended := append([]*scenario.Result(nil), l.ended...)
	l.mu.Unlock()
	if s != nil {
		t := s.Totals()
		for _, e := range []struct {
			name string
			n    int
		}{{"published", t.Published}, {"sent", t.Sent}, {"acked", t.Acked}, {"nacked", t.Nacked}, {"returned", t.Returned}, {"delivered", t.Delivered}} {
			ch <- prometheus.MustNewConstMetric(burstMessagesDesc, prometheus.CounterValue, float64(e.n), scen, string(mode), e.name)
		}
		ch <- prometheus.MustNewConstMetric(burstInFlightDesc, prometheus.GaugeValue, float64(t.InFlight), scen, string(mode))
		ch <- prometheus.MustNewConstMetric(burstInDoubtDesc, prometheus.GaugeValue, float64(t.Backlog), scen, string(mode))
		up := 0.0
		if engine.BrokerStateNow(tl.Events()) == metrics.StateUp {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(brokerUpDesc, prometheus.GaugeValue, up, scen, string(mode))
	}
	for i := range modes {
		if !modes[i].NotRun {
			reports.CollectMode(ch, scen, runID, &modes[i])
		}
	}
	reports.ResultCollector{Results: ended}.Collect(ch)
}

// onBurst hands a starting burst to the progress line and the live
// metrics (engine.Runner.OnBurst).
func (o *runOpts) onBurst(m scenario.Mode, s *metrics.Series, tl *metrics.Timeline) {
	o.prog.onBurst(m, s, tl)
	o.live.onBurst(m, s, tl)
}

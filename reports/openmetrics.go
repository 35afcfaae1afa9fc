package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// The OpenMetrics families a run's result gives (docs/metrics-export.md).
// Every family is a gauge of the result as the run ended, labelled by
// scenario, run_id, mode and, for a matrix run's cells, queue_type,
// persistent and repeat (empty otherwise). Units are base units (seconds), rates are
// messages per second.
var (
	// MessagesDesc is the ledger: messages of each class at the end
	// (class: sent, the partition classes, the classes counted beside it;
	// docs/ledger.md).
	MessagesDesc = prometheus.NewDesc("rmqtorture_messages", "Messages of a burst by ledger class as the run ended (docs/ledger.md).", append(modeLabels, "class"), nil)
	// PublishRateDesc: publish calls that returned per second, downtime
	// included (what: "overall"), and before the first fault ("before_fault").
	PublishRateDesc = prometheus.NewDesc("rmqtorture_publish_rate_messages_per_second", "Publish calls that returned without error per second: over the whole burst (span=\"burst\") and before the first fault (span=\"before_fault\").", append(modeLabels, "span"), nil)
	// IntakeRateDesc: what the broker took in per second over the burst's
	// fault-free time (ModeResult.IntakeRate); absent when it cannot be told.
	IntakeRateDesc = prometheus.NewDesc("rmqtorture_intake_rate_messages_per_second", "What the broker took in per second from the burst's start to the first fault (without one, to the last confirm): basic.acks in the confirm modes, messages into the queue in fire-and-forget.", modeLabels, nil)
	// ConfirmRateDesc: basic.acks per second from the first publish to the
	// last ack (confirm modes).
	ConfirmRateDesc = prometheus.NewDesc("rmqtorture_confirm_rate_messages_per_second", "basic.acks per second from the first publish to the last ack (confirm modes).", modeLabels, nil)
	// ConfirmLatencyDesc: confirm latency by percentile (50, 90, 99, 99.9,
	// 100), from each publish call.
	ConfirmLatencyDesc = prometheus.NewDesc("rmqtorture_confirm_latency_seconds", "Confirm latency from the publish call to its basic.ack or basic.nack, by percentile (100: the longest).", append(modeLabels, "percentile"), nil)
	// DowntimeDesc: the first fault's downtime as observed (absent when
	// nothing went down or it did not come back).
	DowntimeDesc = prometheus.NewDesc("rmqtorture_broker_downtime_seconds", "The first fault's downtime as observed: for a fault that takes the broker down, fault to an accepted AMQP login.", modeLabels, nil)
	// ModeVerdictDesc: 1 for the mode's verdict status, 0 for the others.
	ModeVerdictDesc = prometheus.NewDesc("rmqtorture_mode_verdict", "The mode's verdict: 1 for its status (pass, fail, inconclusive), 0 for the others.", append(modeLabels, "status"), nil)
	// VerdictDesc: 1 for the scenario's verdict status, 0 for the others.
	VerdictDesc = prometheus.NewDesc("rmqtorture_verdict", "The scenario's verdict: 1 for its status (pass, fail, inconclusive), 0 for the others.", []string{"scenario", "run_id", "status"}, nil)
	// InfoDesc: 1, labelled with the run id, the broker's version and the
	// tool's.
	InfoDesc = prometheus.NewDesc("rmqtorture_run_info", "1, labelled with the run's id, the broker's version and rmqtorture's.", []string{"scenario", "run_id", "broker_version", "tool"}, nil)
)

var modeLabels = []string{"scenario", "run_id", "mode", "queue_type", "persistent", "repeat"}

// statuses are the verdict statuses, in the order their series are written.
var statuses = []scenario.Status{scenario.Pass, scenario.Fail, scenario.Inconclusive}

// ResultCollector is a prometheus.Collector of finished results: the
// families above for each result and each mode that ran.
type ResultCollector struct {
	Results []*scenario.Result
}

// Describe sends the families' descriptions.
func (c ResultCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{MessagesDesc, PublishRateDesc, IntakeRateDesc, ConfirmRateDesc, ConfirmLatencyDesc, DowntimeDesc, ModeVerdictDesc, VerdictDesc, InfoDesc} {
		ch <- d
	}
}

// Collect sends every result's series.
func (c ResultCollector) Collect(ch chan<- prometheus.Metric) {
	for _, res := range c.Results {
		ch <- prometheus.MustNewConstMetric(InfoDesc, prometheus.GaugeValue, 1, res.Scenario, res.RunID, res.BrokerVersionOrImage(), res.Tool)
		for _, st := range statuses {
			ch <- prometheus.MustNewConstMetric(VerdictDesc, prometheus.GaugeValue, oneIf(res.Verdict.Status == st), res.Scenario, res.RunID, string(st))
		}
		for i := range res.Modes {
			if m := &res.Modes[i]; !m.NotRun {
				CollectMode(ch, res.Scenario, res.RunID, m)
			}
		}
	}
}

// CollectMode sends the series of one mode of run runID of scenario scen.
func CollectMode(ch chan<- prometheus.Metric, scen, runID string, m *scenario.ModeResult) {
	lv := ModeLabelValues(scen, runID, m)
	gauge := func(d *prometheus.Desc, v float64, more ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(lv[:len(lv):len(lv)], more...)...)
	}
	counts := countsByName(m.Counts)
	for _, class := range LedgerClasses() {
		gauge(MessagesDesc, float64(counts[class]), class)
	}
	gauge(PublishRateDesc, m.PublishRate, "burst")
	gauge(PublishRateDesc, m.PreFaultPublishRate, "before_fault")
	if m.IntakeRate > 0 {
		gauge(IntakeRateDesc, m.IntakeRate)
	}
	if m.Mode != scenario.FireAndForget {
		gauge(ConfirmRateDesc, m.ConfirmRate)
		l := m.ConfirmLatency
		for _, p := range []struct {
			name string
			ms   float64
		}{{"50", l.P50}, {"90", l.P90}, {"99", l.P99}, {"99.9", l.P999}, {"100", l.Max}} {
			if l.Count > 0 {
				gauge(ConfirmLatencyDesc, secondsOf(p.ms), p.name)
			}
		}
	}
	if m.BrokerDowntimeMS != nil {
		gauge(DowntimeDesc, secondsOf(*m.BrokerDowntimeMS))
	}
	for _, st := range statuses {
		gauge(ModeVerdictDesc, oneIf(m.Verdict.Status == st), string(st))
	}
}

// ModeLabelValues are the values of a mode's labels (modeLabels). The run
// id tells apart runs of one scenario in one file (--images runs each
// scenario once per image).
func ModeLabelValues(scen, runID string, m *scenario.ModeResult) []string {
	if m.Cell == nil {
		return []string{scen, runID, string(m.Mode), "", "", ""}
	}
	return []string{scen, runID, string(m.Mode), string(m.Cell.QueueType), strconv.FormatBool(m.Cell.Persistent), strconv.Itoa(m.Cell.Repeat)}
}

// LedgerClasses are the classes rmqtorture_messages has, by their JSON
// names: sent, the partition classes and the classes counted beside it.
func LedgerClasses() []string {
	return append(append([]string{"sent"}, metrics.PartitionClasses...), metrics.CrossClasses...)
}

// countsByName is c by its fields' JSON names.
func countsByName(c metrics.Counts) map[string]int {
	b, _ := json.Marshal(c)
	out := map[string]int{}
	_ = json.Unmarshal(b, &out)
	return out
}

// secondsOf is ms in seconds, to the microsecond (result.json's precision).
func secondsOf(ms float64) float64 {
	return math.Round(ms*1000) / 1e6
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// OpenMetrics writes the results as OpenMetrics text
// (https://prometheus.io/docs/specs/om/open_metrics_spec/), through
// client_golang's registry and expfmt's encoder, ending with # EOF.
// Errors are the gatherer's and the writer's.
func OpenMetrics(w io.Writer, results ...*scenario.Result) error {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(ResultCollector{Results: results}); err != nil {
		return err
	}
	return WriteOpenMetrics(w, reg)
}

// WriteOpenMetrics gathers g and writes it as OpenMetrics text.
func WriteOpenMetrics(w io.Writer, g prometheus.Gatherer) error {
	families, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather the metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

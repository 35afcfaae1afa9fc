package reports

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// timelineHeader names TimelineCSV's columns.
var timelineHeader = []string{"mode", "bucket_start_ms", "bucket_ms", "published", "republished", "acked", "nacked", "returned", "delivered", "in_flight", "reconnects", "broker"}

// TimelineCSV writes every mode's timeline series (ModeResult.Series, the
// figures of the timeline chart) as CSV (RFC 4180, encoding/csv), for a
// spreadsheet or a plotting tool: a header, then one row per mode and
// bucket, in the result's mode order. Columns:
//
//   - mode: the mode, with its matrix cell if any ("confirm-window · quorum ·
//     persistent · #1");
//   - bucket_start_ms, bucket_ms: the bucket's start since the burst began,
//     and its width, in ms;
//   - published (publish attempts, republishes included), republished,
//     acked (basic.ack), nacked (basic.nack), returned (basic.return),
//     delivered (deliveries of the burst's ids), reconnects: counts in the
//     bucket;
//   - in_flight: published in a confirm mode and awaiting a confirm at the
//     bucket's end;
//   - broker: the worst broker state in the bucket (up, down, paused, …).
//
// A mode without a series (never run) has no rows. Errors are w's.
func TimelineCSV(w io.Writer, r *scenario.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(timelineHeader); err != nil {
		return err
	}
	for _, m := range r.Modes {
		d := m.Series
		if d == nil {
			continue
		}
		for i := range d.Len() {
			row := []string{label(m), csvMS(float64(i) * d.BucketMS), csvMS(d.BucketMS),
				strconv.Itoa(d.Published[i]), strconv.Itoa(at(d.Republished, i)), strconv.Itoa(d.Acked[i]), strconv.Itoa(d.Nacked[i]),
				strconv.Itoa(d.Returned[i]), strconv.Itoa(d.Delivered[i]), strconv.Itoa(d.InFlight[i]), strconv.Itoa(at(d.Reconnects, i)),
				string(brokerAt(d, i))}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvMS formats a time in ms for the CSV: no decimals when whole.
func csvMS(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// brokerAt is the bucket's broker state ("up" when not recorded).
func brokerAt(d *metrics.SeriesData, i int) metrics.BrokerState {
	if i < len(d.Broker) && d.Broker[i] != "" {
		return d.Broker[i]
	}
	return metrics.StateUp
}

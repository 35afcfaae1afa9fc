package reports

import (
	"bytes"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Two buckets of one mode, a mode never run (no rows), and a matrix cell
// named as the report names it.
func TestTimelineCSV(t *testing.T) {
	r := &scenario.Result{Modes: []scenario.ModeResult{
		{Mode: scenario.ConfirmWindow, Series: &metrics.SeriesData{BucketMS: 250,
			Published: []int{100, 40}, Republished: []int{0, 5}, Acked: []int{90, 45}, Nacked: []int{0, 1}, Returned: []int{2, 0},
			Delivered: []int{0, 0}, InFlight: []int{10, 4}, Reconnects: []int{0, 1}, Broker: []metrics.BrokerState{metrics.StateUp, metrics.StateDown}}},
		{Mode: scenario.FireAndForget, NotRun: true},
		{Mode: scenario.ConfirmEach, Cell: &scenario.Cell{QueueType: scenario.Classic, Persistent: true, Repeat: 2},
			Series: &metrics.SeriesData{BucketMS: 250, Published: []int{7}, Acked: []int{7}, Nacked: []int{0}, Returned: []int{0}, Delivered: []int{7}, InFlight: []int{0}}},
	}}
	var b bytes.Buffer
	if err := TimelineCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	want := `mode,bucket_start_ms,bucket_ms,published,republished,acked,nacked,returned,delivered,in_flight,reconnects,broker
confirm-window,0,250,100,0,90,0,2,0,10,0,up
confirm-window,250,250,40,5,45,1,0,0,4,1,down
confirm-each · classic · persistent · #2,0,250,7,0,7,0,0,7,0,0,up
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

package reports

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// TestDescriptionStatesTheRealCount: a description written for the
// scenario file's load.messages states the run's count when --messages
// changed it, and keeps the file's figure beside it.
func TestDescriptionStatesTheRealCount(t *testing.T) {
	for _, tc := range []struct {
		desc string
		msgs int
		want string
	}{
		{"20,000 persistent orders to a quorum queue; SIGKILL the broker once 50% are published.", 2000,
			"2,000 persistent orders (20,000 in the scenario file) to a quorum queue; SIGKILL the broker once 50% are published."},
		{"The same 20,000 orders with no fault: what each publishing mode costs.", 500,
			"The same 500 orders (20,000 in the scenario file) with no fault: what each publishing mode costs."},
		{"Every 10th of 10,000 orders carries a routing key nothing is bound to; exactly 1,000 returned.", 100000,
			"Every 10th of 100,000 orders (10,000 in the scenario file) carries a routing key nothing is bound to; exactly 1,000 returned."},
		{"The same 20,000 orders with no fault.", 20000, "The same 20,000 orders with no fault."},
		{"SIGKILL at 50% of 20,000 with 1,000 in flight.", 2000, "SIGKILL at 50% of 20,000 with 1,000 in flight."}, // no "orders": left alone
		{"", 2000, ""},
	} {
		if got := description(&scenario.Result{Description: tc.desc, Messages: tc.msgs}); got != tc.want {
			t.Errorf("%q with %d:\n got %q\nwant %q", tc.desc, tc.msgs, got, tc.want)
		}
	}
}

package reports

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// TestSizeNote: report.md says when the run's burst size differs from the
// order count its description names (run --messages), and says nothing
// when they agree or the description names none.
func TestSizeNote(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		messages int
		want     string
	}{
		{"20,000 persistent orders to a quorum queue; SIGKILL at 50%.", 3000, " (This run: 3,000 orders per burst, not the 20,000 the description gives.)"},
		{"SIGKILL at 30% of 10,000 orders, started 5 s later.", 10000, ""},
		{"The same 20,000 orders with no fault.", 500, " (This run: 500 orders per burst, not the 20,000 the description gives.)"},
		{"1,000 orders with message_size_bytes 16.", 1000, ""},
		{"Transient (delivery mode 1) orders to a durable classic queue.", 3000, ""},
		{"An operator closes every client connection.", 3000, ""},
		{"", 3000, ""},
	} {
		if got := sizeNote(&scenario.Result{Description: tc.desc, Messages: tc.messages}); got != tc.want {
			t.Errorf("%q, %d messages: %q, want %q", tc.desc, tc.messages, got, tc.want)
		}
	}
}

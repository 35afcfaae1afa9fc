package traffic

import (
	"slices"
	"testing"
)

// Waiting ids are republished oldest first, each once.
func TestQueueOldestFirst(t *testing.T) {
	var q []int
	for _, seq := range []int{7, 3, 9, 3, 1} {
		q = QueueOldestFirst(q, seq)
	}
	if want := []int{1, 3, 7, 9}; !slices.Equal(q, want) {
		t.Errorf("%v, want %v", q, want)
	}
}

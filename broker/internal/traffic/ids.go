package traffic

import "slices"

// TakeNext takes the next id to publish from a publisher's queue, under
// the caller's lock: the oldest id in retry first (republishes, and ids
// taken but not published), then the fresh id next, while next < end.
// fresh tells which it was.
func TakeNext(retry *[]int, next *int, end int) (seq int, fresh, ok bool) {
	if len(*retry) > 0 {
		seq = (*retry)[0]
		*retry = (*retry)[1:]
		return seq, false, true
	}
	if *next < end {
		*next++
		return *next - 1, true, true
	}
	return 0, false, false
}

// QueueOldestFirst inserts seq into retry, which it keeps in id order:
// ids are taken in publish order, so the oldest waiting id goes first
// (an in-doubt id once waited a whole connection more because a newer id
// put back in front of it went first). The stream's deduplication needs
// that order too: it drops a publishing id that is not above the highest
// it stored.
func QueueOldestFirst(retry []int, seq int) []int {
	i, found := slices.BinarySearch(retry, seq)
	if found {
		return retry
	}
	return slices.Insert(retry, i, seq)
}

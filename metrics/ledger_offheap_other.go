//go:build !unix

package metrics

// mapAnonymous is not available here: the ledger keeps its arrays on the
// Go heap.
func mapAnonymous(int) ([]byte, bool) { return nil, false }

func unmap([]byte) {}

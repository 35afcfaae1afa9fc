package scenario

// ResourceUse is what the rmqtorture process itself spent on one mode. The
// CPU figures are process-wide (getrusage RUSAGE_SELF, user + system): they
// include everything the process did meanwhile (publishers, live consumers,
// fault calls, the history writer), not the broker, which runs in its own
// container. Modes run one after another, so each mode's CPU figures are
// its own.
type ResourceUse struct {
	// BurstCPUS is the process's CPU time from just before the first
	// publish until the burst and its faults ended, in s.
	BurstCPUS float64 `json:"burst_cpu_s"`
	// DrainCPUS is the process's CPU time over the drain, in s.
	DrainCPUS float64 `json:"drain_cpu_s"`
	// CPUPer100kS is (BurstCPUS + DrainCPUS) per 100,000 ids sent, in s (0
	// when no id was sent).
	CPUPer100kS float64 `json:"cpu_per_100k_msgs_s"`
	// PeakRSSBytes is the process's peak resident set size so far
	// (getrusage ru_maxrss, as /proc/self/status VmHWM), read when the
	// mode ended, in bytes. The kernel keeps one peak per process and
	// cannot reset it, so a later mode's figure is the peak over it and
	// every mode before it.
	PeakRSSBytes uint64 `json:"peak_rss_bytes"`
	// LedgerBytesPerID is the message ledger's per-id state when the mode
	// ended (metrics.Ledger.BytesPerID), in bytes per id.
	LedgerBytesPerID float64 `json:"ledger_bytes_per_id"`
}

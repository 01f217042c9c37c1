package nemesis

import "time"

// Defaults of a nemesis made without options; runner.Defaults takes the
// run's from them, so that a value is written once.
const (
	// DefaultInterval is the mean time between faults and the mean fault length.
	DefaultInterval = 10 * time.Second
	// DefaultClientPauseExtra is how much longer than its lease a paused
	// holder stalls: enough for another client to acquire and write.
	DefaultClientPauseExtra = 3 * time.Second
)

// The loss fault's drop probability is drawn in [DefaultLossMin,
// DefaultLossMax]: below 5 % TCP hides the loss, above 50 % it is a partition.
const (
	DefaultLossMin = 0.05
	DefaultLossMax = 0.5
)

package nemesis

import "github.com/lockcheck/lockcheck/spec"

// Defaults of a nemesis made without options: a run's (spec.Defaults), so
// that a setting has one default.
const (
	// DefaultInterval is the mean time between faults and the mean fault length.
	DefaultInterval = spec.DefaultInterval
	// DefaultClientPauseExtra is how much longer than its lease a paused
	// holder stalls: enough for another client to acquire and write.
	DefaultClientPauseExtra = spec.DefaultPauseExtra
)

// The loss fault's drop probability is drawn in [DefaultLossMin,
// DefaultLossMax]: below 5 % TCP hides the loss, above 50 % it is a partition.
const (
	DefaultLossMin = 0.05
	DefaultLossMax = 0.5
)

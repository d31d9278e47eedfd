package cfgutil

import "time"

// CheckGlobal checks the keys Overcast adds to the [Global] section of an
// INI cloud config, telling add of each bad one: api-read-qps and
// api-write-qps (0 for the default, else 1..10000) and lifecycle-max-age
// (0s..1h).
func CheckGlobal(add func(format string, a ...any), readQPS, writeQPS int, lifecycleMaxAge Duration) {
	if readQPS < 0 || readQPS > 10000 {
		add("[Global] api-read-qps: %d is outside 1..10000", readQPS)
	}
	if writeQPS < 0 || writeQPS > 10000 {
		add("[Global] api-write-qps: %d is outside 1..10000", writeQPS)
	}
	if d := lifecycleMaxAge.Duration; d < 0 || d > time.Hour {
		add("[Global] lifecycle-max-age: %s is outside 0s..1h", d)
	}
}

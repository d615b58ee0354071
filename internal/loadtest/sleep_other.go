//go:build !linux

package loadtest

import "time"

// sleep is time.Sleep where nanosleep(2) is not reachable through package
// syscall; the schedule is then only as precise as the runtime's timers.
func sleep(d time.Duration) { time.Sleep(d) }

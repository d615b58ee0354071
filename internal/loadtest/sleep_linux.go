package loadtest

import (
	"syscall"
	"time"
)

// sleep blocks the calling thread in nanosleep(2). The Go runtime wakes
// sleeping goroutines from epoll_wait, whose timeout is in whole
// milliseconds, so on an otherwise idle process time.Sleep(300µs) returns
// after about a millisecond; a high-resolution kernel timer returns within
// the thread's timer slack (50µs by default). An open loop at 1000 req/s
// needs the latter, or every request leaves up to a millisecond late.
func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR: the caller loops on the clock
}

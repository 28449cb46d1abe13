package consumer

import "time"

// SetConsumeMaxWait makes a Consume's pulls last up to d, so that a test
// can tell a message sent while its pull is open from one sent when it
// ends; it returns the restore.
func SetConsumeMaxWait(d time.Duration) (restore func()) {
	was := consumeMaxWait
	consumeMaxWait = d
	return func() { consumeMaxWait = was }
}

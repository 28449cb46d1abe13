package push

import "time"

// The flow's side of batches: a worker takes the jobs of a batch, gives
// back those its body had no room for, and the retrier takes a failed
// batch's jobs together.

// nextBatch waits for the jobs of a batch a worker may push now: up to
// maxN, about maxBytes (at least one job), once that many are queued or the
// first has waited maxWait. One worker at a time waits for a batch to fill,
// its timer set; nil once stopped.
func (f *flow) nextBatch(maxN int, maxBytes int64, maxWait time.Duration) []*job {
	f.mu.Lock()
	defer f.mu.Unlock()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	collector := false // this worker
	for {
		if f.stopped {
			if collector {
				f.collecting = false
			}
			return nil
		}
		if f.held || f.paused || len(f.queue) == 0 {
			if collector { // nothing to collect: another may, when jobs come
				collector, f.collecting = false, false
			}
			f.cond.Wait()
			continue
		}
		n, full := f.fits(maxN, maxBytes)
		wait := time.Until(f.queue[0].added.Add(maxWait))
		if full || wait <= 0 {
			if collector {
				f.collecting = false
			}
			b := make([]*job, n)
			copy(b, f.queue)
			f.queue = f.queue[n:]
			f.inFlight += n
			if len(f.queue) > 0 {
				f.cond.Signal() // the rest, for another worker
			}
			return b
		}
		if !f.collecting || collector {
			collector, f.collecting = true, true
			if timer == nil {
				// Under the lock, so that its Broadcast cannot come
				// between this check and the Wait.
				timer = time.AfterFunc(wait, func() {
					f.mu.Lock()
					f.cond.Broadcast()
					f.mu.Unlock()
				})
			} else {
				timer.Reset(wait)
			}
		}
		f.cond.Wait()
	}
}

// fits is how many of the queued jobs a batch takes, and whether they fill
// it: maxN, or as many as maxBytes holds (at least one), or those before a
// job that goes alone, or that job.
func (f *flow) fits(maxN int, maxBytes int64) (n int, full bool) {
	if f.queue[0].alone {
		return 1, true
	}
	var size int64
	for n < len(f.queue) && n < maxN {
		if f.queue[n].alone {
			return n, true // it goes next, alone
		}
		size += f.queue[n].size + 1 // and a comma
		if size > maxBytes && n > 0 {
			return n, true
		}
		n++
	}
	return n, n == maxN || size >= maxBytes
}

// putBack returns the jobs of a batch that its body had no room for to the
// head of the queue: they go out next, in the next batch.
func (f *flow) putBack(js []*job) {
	if len(js) == 0 {
		return
	}
	for _, j := range js {
		j.added = time.Time{} // due: they were ready for the batch they leave
	}
	f.mu.Lock()
	f.inFlight -= len(js)
	f.queue = append(js[:len(js):len(js)], f.queue...)
	f.mu.Unlock()
	f.cond.Signal()
}

// takeBatch is take for a batch: j, and if it failed, the jobs that failed
// in its request with it (up to maxN in all), so that a batch that failed
// alike is tried again alike. Nil if j is neither failed nor queued now.
func (f *flow) takeBatch(j *job, maxN int) []*job {
	f.mu.Lock()
	defer f.mu.Unlock()
	found, failed := f.takeLocked(j)
	if !found {
		return nil
	}
	js := []*job{j}
	if !failed {
		return js
	}
	keep := f.failed[:0]
	for _, x := range f.failed {
		if len(js) < maxN && x.failedAt.Equal(j.failedAt) {
			x.retry = true
			js = append(js, x)
			f.inFlight++
		} else {
			keep = append(keep, x)
		}
	}
	clear(f.failed[len(keep):])
	f.failed = keep
	return js
}

// aloneMax bounds flow.alone: some 40 bytes a message.
const aloneMax = 4096

// markAlone records that the jobs' failures were their own, so that each
// that failed with a 500 goes in a batch of its own when the server
// delivers it again.
func (f *flow) markAlone(js []*job) {
	if len(js) == 0 { // most successes judge none
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range js {
		if !j.faulted {
			continue
		}
		if len(f.alone) >= aloneMax {
			clear(f.alone)
		}
		if f.alone == nil {
			f.alone = make(map[uint64]uint64)
		}
		f.alone[j.d.Meta.StreamSeq] = j.d.Meta.Delivered
	}
}

// aloneLocked sets j to go alone if its message failed on its own before,
// in an earlier delivery (a delivery no later is from before a reset);
// f.mu is held.
func (f *flow) aloneLocked(j *job) {
	seq := j.d.Meta.StreamSeq
	if failed, ok := f.alone[seq]; ok {
		delete(f.alone, seq)
		j.alone = j.d.Meta.Delivered > failed
	}
}

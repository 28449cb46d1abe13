package replica

// EndStreams ends every caller's Consume stream, UNAVAILABLE, as the
// gateway begins to stop: such a stream never ends by itself, and kept
// open it would hold the stop for its whole grace while its caller, whose
// connection takes no new call, could settle nothing (a reviewer saw each
// message a client library held run twice). The caller reconnects, to
// another replica or to this one started again, and settles there the
// leases it holds, which stay its own. Push streams stop with StopPush.
// A stream that starts after it ends at once (ConsumeRequest.Ending).
func (r *Replica) EndStreams() { r.endStreams.Do(func() { close(r.ending) }) }

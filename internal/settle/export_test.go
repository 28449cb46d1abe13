package settle

// ForwardWindow is how far a forward's timestamp may be from the receiver's
// clock, for tests at its edges.
const ForwardWindow = forwardWindow

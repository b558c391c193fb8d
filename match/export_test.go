package match

// OnePassBody and GeneralBody expose the two ways appendBody may take, so
// that tests can check they agree.
func (m *Matcher) OnePassBody(r *Request) ([]byte, bool, error) { return m.appendBody(nil, r) }
func (m *Matcher) GeneralBody(r *Request) ([]byte, bool, error) { return m.appendBodyGeneral(nil, r) }

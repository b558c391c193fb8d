package match

// OnePassBody and GeneralBody expose the two ways appendBody may take, so
// that tests can check they agree.
func (m *Matcher) OnePassBody(r *Request) ([]byte, bool, error) { return m.appendBody(nil, r) }
func (m *Matcher) GeneralBody(r *Request) ([]byte, bool, error) { return m.appendBodyGeneral(nil, r) }

// AppendQuery and CanonQuery expose the two ways a query is put in order,
// so that tests can check they agree.
func (m *Matcher) AppendQuery(raw string) string { return string(m.appendQuery(nil, raw)) }
func (m *Matcher) CanonQuery(raw string) string  { return m.canonQuery(raw) }

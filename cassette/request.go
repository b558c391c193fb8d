package cassette

import (
	"fmt"
)

// RequestView is a recorded request as stored, read in place for ranking
// candidates: Kind and Body are slices of the transaction's bytes, valid
// only inside the Read they come from, never to be changed or kept.
type RequestView struct {
	Kind []byte
	Body []byte
}

// RequestView reads an interaction's API kind and request body without
// decoding the rest of its record (a record of format 1 is decoded). An
// error names the interaction and wraps ErrBadRecord (or
// store.ErrNotFound).
func (r *Reader) RequestView(id uint64) (RequestView, error) {
	v, err := r.tx.Get(id)
	if err != nil {
		return RequestView{}, err
	}
	if len(v) == 0 || v[0] != recordTag {
		i, err := decode(id, v)
		if err != nil {
			return RequestView{}, fmt.Errorf("cassette %s: %w", r.path, err)
		}
		return RequestView{Kind: []byte(i.Kind), Body: i.Request.Body}, nil
	}
	rec, err := split(v)
	if err != nil {
		return RequestView{}, fmt.Errorf("cassette %s: interaction %d: %v: %w", r.path, id, err, ErrBadRecord)
	}
	rd := reader{b: rec.front}
	rd.bytes() // upstream
	rd.bytes() // provider
	kind := rd.bytes()
	for range 4 { // recorded_at, method, path, query
		rd.bytes()
	}
	rd.skipHeaders()
	body := rd.bytes()
	if err := rd.end("request"); err != nil {
		return RequestView{}, fmt.Errorf("cassette %s: interaction %d: %v: %w", r.path, id, err, ErrBadRecord)
	}
	return RequestView{Kind: kind, Body: body}, nil
}

// Request returns an interaction with its request only (its Response is
// zero), decoding no more of its record than the request.
func (r *Reader) Request(id uint64) (*Interaction, error) {
	v, err := r.tx.Get(id)
	if err != nil {
		return nil, err
	}
	if len(v) == 0 || v[0] != recordTag {
		i, err := decode(id, v)
		if err != nil {
			return nil, fmt.Errorf("cassette %s: %w", r.path, err)
		}
		i.ID, i.Response = id, Response{}
		return i, nil
	}
	rec, err := split(v)
	if err != nil {
		return nil, fmt.Errorf("cassette %s: interaction %d: %v: %w", r.path, id, err, ErrBadRecord)
	}
	i := &Interaction{ID: id}
	if err := readFront(i, rec.front); err != nil {
		return nil, fmt.Errorf("cassette %s: interaction %d: %v: %w", r.path, id, err, ErrBadRecord)
	}
	return i, nil
}

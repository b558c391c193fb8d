package cassette

import (
	"fmt"
	"time"
)

// Old is what RecordedBefore found: the interactions recorded before a
// time, in recorded order, and the oldest of them.
type Old struct {
	// IDs are the old interactions' ids.
	IDs []uint64
	// Oldest is the id of the one recorded first, and OldestAt when.
	Oldest   uint64
	OldestAt time.Time
}

// RecordedBefore lists the interactions of c recorded before t, reading
// only each record's recording time (a format-1 record is decoded).
func (c *Cassette) RecordedBefore(t time.Time) (Old, error) {
	var old Old
	err := c.st.ForEach(func(id uint64, v []byte) error {
		at, err := recordedAt(id, v)
		if err != nil {
			return fmt.Errorf("cassette %s: %w", c.Path(), err)
		}
		if !at.Before(t) {
			return nil
		}
		old.IDs = append(old.IDs, id)
		if old.Oldest == 0 || at.Before(old.OldestAt) {
			old.Oldest, old.OldestAt = id, at
		}
		return nil
	})
	return old, err
}

// FormatAge shows an interaction's age coarsely, one form for ls, the web
// view and the --max-age messages: "<1m", minutes under an hour, hours
// under two days, else days ("90d").
func FormatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "<1m"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// recordedAt reads when a stored interaction was recorded.
func recordedAt(id uint64, v []byte) (time.Time, error) {
	if len(v) == 0 || v[0] != recordTag {
		i, err := decode(id, v)
		if err != nil {
			return time.Time{}, err
		}
		return i.RecordedAt, nil
	}
	rec, err := split(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("interaction %d: %v: %w", id, err, ErrBadRecord)
	}
	rd := reader{b: rec.front}
	rd.bytes() // upstream
	rd.bytes() // provider
	rd.bytes() // kind
	text := rd.bytes()
	var at time.Time
	if rd.err == nil {
		err = at.UnmarshalText(text)
	} else {
		err = rd.err
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("interaction %d: recorded_at: %v: %w", id, err, ErrBadRecord)
	}
	return at, nil
}

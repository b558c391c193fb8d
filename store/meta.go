package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Meta is a cassette's metadata.
type Meta struct {
	FormatVersion int       `json:"format_version"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	Version       string    `json:"llmproxy_version"`
	// IndexRules identifies the matching settings the index was built with.
	// The store does not interpret it; a reader with other settings must build
	// its own index.
	IndexRules string `json:"index_rules"`
}

// putMeta writes the metadata as given, format version included.
func putMeta(tx *bolt.Tx, m Meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyMeta, b)
}

func getMeta(tx *bolt.Tx) (Meta, error) {
	var m Meta
	err := json.Unmarshal(tx.Bucket(bucketMeta).Get(keyMeta), &m)
	return m, err
}

// Meta returns the cassette's metadata.
func (s *Store) Meta() (Meta, error) {
	var m Meta
	err := s.view("read", func(tx *bolt.Tx) error {
		var err error
		m, err = getMeta(tx)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("cassette %s: metadata: %w", s.path, err)
	}
	return m, nil
}

// SetIndexRules records the matching settings the index is built with. It
// is meant for an empty cassette; Replace changes it for a full one.
func (s *Store) SetIndexRules(rules string) error {
	return s.update(func(tx *bolt.Tx) error {
		m, err := getMeta(tx)
		if err != nil {
			return err
		}
		m.IndexRules = rules
		if tx.Bucket(bucketInteractions).Sequence() == 0 {
			m.FormatVersion = FormatVersion // nothing stored in an older form
		}
		return putMeta(tx, m)
	})
}

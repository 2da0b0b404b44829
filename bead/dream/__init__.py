"""The dream job: groom the store with a model, nightly. It never deletes."""

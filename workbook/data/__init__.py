"""data: a scenario's ``data:`` section, prepared with verl's own preprocessing before launch."""

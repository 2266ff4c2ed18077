"""The help's example bases, as the view and document tests both read them."""

from __future__ import annotations

# The "Bases syntax" page's example, with one change: its `ppu` formula ends in `.toFixed(2)`,
# which makes it text, and its view then compares that text with a number (see the test below).
SYNTAX_EXAMPLE = """
filters:
  or:
    - file.hasTag("tag")
    - and:
        - file.hasTag("book")
        - file.hasLink("Textbook")
    - not:
        - file.hasTag("book")
        - file.inFolder("Required Reading")
formulas:
  formatted_price: 'if(price, price.toFixed(2) + " dollars")'
  ppu: "price / age"
properties:
  status:
    displayName: Status
  formula.formatted_price:
    displayName: "Price"
  file.ext:
    displayName: Extension
summaries:
  customAverage: 'values.mean().round(3)'
views:
  - type: table
    name: "My table"
    limit: 10
    groupBy:
      property: note.age
      direction: DESC
    filters:
      and:
        - 'status != "done"'
        - or:
            - "formula.ppu > 5"
            - "price > 2.1"
    order:
      - file.name
      - file.ext
      - note.age
      - formula.ppu
      - formula.formatted_price
    summaries:
      formula.ppu: Average
  - type: table
    name: Prices
    order: [file.name, status, price]
    sort:
      - property: price
        direction: DESC
    summaries:
      price: customAverage
      status: Unique
"""

READING = """
filters: file.inFolder("Books")
views:
  - type: table
    name: Reading list
    filters: 'status != "finished"'
    order: [file.name, status]
    sort:
      - property: file.name
        direction: ASC
  - type: table
    name: Recently finished
    filters: 'status == "finished"'
    order: [file.name, finished]
    sort:
      - property: finished
        direction: DESC
    limit: 2
  - type: table
    name: Finished, oldest first
    filters: 'status == "finished"'
    order: [file.name, finished]
    sort:
      - property: finished
"""

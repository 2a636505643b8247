/**
 * The pushes of one connection awaiting the client's ack, by request id. The relay numbers pushes
 * in one increasing sequence, so a connection's ids arrive in ascending order and clients ack in
 * about that order: two arrays and a binary search take an ack without the hash-table work, or the
 * growing and shrinking tables, of a `Map` that fills and empties with every burst.
 */
export class InFlight<item> {
  #ids: number[] = []
  #items: (item | undefined)[] = []
  /** Entries before `#head` are all taken; entries from `#tail` on are unused room. */
  #head = 0
  #tail = 0
  #size = 0

  get size(): number {
    return this.#size
  }

  /** Adds an entry; `id` must be larger than every id added before. */
  add(id: number, item: item) {
    if (this.#tail === this.#ids.length && this.#size <= this.#tail >> 1) this.#compact()
    this.#ids[this.#tail] = id
    this.#items[this.#tail] = item
    this.#tail++
    this.#size++
  }

  /** Removes and answers the entry of `id`; undefined when there is none (never sent, or taken). */
  take(id: number): item | undefined {
    const ids = this.#ids
    let low = this.#head
    let high = this.#tail - 1
    while (low <= high) {
      const middle = (low + high) >>> 1
      const found = ids[middle]!
      if (found < id) low = middle + 1
      else if (found > id) high = middle - 1
      else {
        const item = this.#items[middle]
        if (item === undefined) return undefined
        this.#items[middle] = undefined
        this.#size--
        if (this.#size === 0) this.#head = this.#tail = 0
        else if (middle === this.#head) while (this.#items[this.#head] === undefined) this.#head++
        return item
      }
    }
    return undefined
  }

  /** Moves the entries left to the front, in order, so the arrays' room is used again before they grow. */
  #compact() {
    let to = 0
    for (let from = this.#head; from < this.#tail; from++) {
      const item = this.#items[from]
      if (item === undefined) continue
      this.#ids[to] = this.#ids[from]!
      this.#items[to] = item
      to++
    }
    this.#items.fill(undefined, to, this.#tail)
    this.#head = 0
    this.#tail = to
  }
}

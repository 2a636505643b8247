/**
 * `items.map(work)` for async work, one item at a time: statements of one transaction run in
 * order on its one connection.
 *
 * @example
 * const views = await mapSeries(users, (user) => userView(db, user))
 */
export async function mapSeries<item, result>(items: Iterable<item>, work: (item: item, index: number) => Promise<result>): Promise<result[]> {
  const results: result[] = []
  let index = 0
  for (const item of items) results.push(await work(item, index++))
  return results
}

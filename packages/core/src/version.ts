/** Package version, shown in error messages. */
export const version = '0.1.0'

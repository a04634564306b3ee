// Original file: proto/iris/v1/types.proto


/**
 * A requirement on worker attributes. op: EQ | NE | EXISTS | IN | GT | LT.
 * EQ/NE/GT/LT use `value` (GT/LT compare numerically), IN uses `values`, EXISTS neither.
 */
export interface Constraint {
  'key'?: (string);
  'op'?: (string);
  'value'?: (string);
  'values'?: (string)[];
}

/**
 * A requirement on worker attributes. op: EQ | NE | EXISTS | IN | GT | LT.
 * EQ/NE/GT/LT use `value` (GT/LT compare numerically), IN uses `values`, EXISTS neither.
 */
export interface Constraint__Output {
  'key': (string);
  'op': (string);
  'value': (string);
  'values': (string)[];
}

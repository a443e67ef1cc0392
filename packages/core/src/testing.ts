export const placeholderTesting = 1;

export { default } from '../../tsdown.base'
